package objstore

import (
	"net"

	"github.com/minio/minio-go/v7"
)

func netListen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func minioMakeBucketOptions(region string) minio.MakeBucketOptions {
	return minio.MakeBucketOptions{Region: region}
}
