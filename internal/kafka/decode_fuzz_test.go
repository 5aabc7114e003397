package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzMaxRequest is socket.request.max.bytes for the fuzzed connection:
// small, so a frame claiming a huge size does not allocate much.
const fuzzMaxRequest = 1 << 20

// appendFrame frames a request as a client does: size, header (v1, or v2
// with tagged fields for flexible versions), body.
func appendFrame(dst []byte, req kmsg.Request, corr int32, clientID *string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, corr)
	dst = kbin.AppendNullableString(dst, clientID)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// populate fills the requests whose interesting paths need content.
func populate(req kmsg.Request) {
	topic := "fuzz"
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		// A small v2 batch header followed by one record's bytes.
		rp.Records = append(bytes.Repeat([]byte{0}, 16), 2, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0)
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		r.Acks = -1
	case *kmsg.FetchRequest:
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, [16]byte{1, 2, 3}
		rt.Partitions = append(rt.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, rt)
	case *kmsg.ListOffsetsRequest:
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, rt)
	case *kmsg.MetadataRequest:
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &topic
		r.Topics = append(r.Topics, mt)
	case *kmsg.CreateTopicsRequest:
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 3, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		ct.Configs = append(ct.Configs, c)
		r.Topics = append(r.Topics, ct)
	case *kmsg.IncrementalAlterConfigsRequest:
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
		rr.Configs = append(rr.Configs, c)
		r.Resources = append(r.Resources, rr)
	case *kmsg.ApiVersionsRequest:
		r.ClientSoftwareName, r.ClientSoftwareVersion = "weir-fuzz", "1.0"
	}
}

// FuzzDecodeRequest feeds byte streams to a connection's read path
// (framing, then header and body decoding) and checks that it never
// panics and that what it accepts is consistent.
func FuzzDecodeRequest(f *testing.F) {
	s := &Server{cfg: Config{MaxRequestSize: fuzzMaxRequest}}
	s.apis = s.apiTable()
	id := "weir"
	for key, a := range s.apis {
		for _, v := range []int16{a.min, (a.min + a.max) / 2, a.max} {
			for _, full := range []bool{false, true} {
				req := kmsg.RequestForKey(key)
				req.SetVersion(v)
				if full {
					populate(req)
				}
				frame := appendFrame(nil, req, 1, &id)
				f.Add(frame)
				f.Add(appendFrame(frame, req, 2, nil)) // two pipelined frames
				f.Add(frame[:len(frame)-1])            // cut short
			}
		}
	}
	// KIP-511: an ApiVersions version from the future.
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	future := appendFrame(nil, av, 1, &id)
	binary.BigEndian.PutUint16(future[6:], 99)
	f.Add(future)

	f.Fuzz(func(t *testing.T, data []byte) {
		c := &conn{srv: s}
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			frame, _, err := c.readFrame(r)
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return
				}
				if len(frame) != 0 {
					t.Fatalf("readFrame failed (%v) with a %d-byte frame", err, len(frame))
				}
				return // the connection would close
			}
			if len(frame) < 8 || len(frame) > fuzzMaxRequest {
				t.Fatalf("readFrame accepted a %d-byte frame", len(frame))
			}
			req, err := s.decodeRequest(frame)
			if err != nil {
				if req != nil {
					t.Fatalf("decode failed (%v) but returned a request", err)
				}
				return // the connection would close
			}
			a, ok := s.apis[req.Key]
			if !ok {
				t.Fatalf("decoded unknown api key %d", req.Key)
			}
			inRange := req.Version >= a.min && req.Version <= a.max
			switch {
			case req.Body == nil && (req.Key != apiVersionsKey || inRange):
				t.Fatalf("%s v%d decoded without a body", kmsg.NameForKey(req.Key), req.Version)
			case req.Body != nil && !inRange:
				t.Fatalf("%s v%d decoded outside the served range %d-%d", kmsg.NameForKey(req.Key), req.Version, a.min, a.max)
			case req.Body != nil && (req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version):
				t.Fatalf("body is %s v%d, header %s v%d", kmsg.NameForKey(req.Body.Key()), req.Body.GetVersion(), kmsg.NameForKey(req.Key), req.Version)
			}
		}
	})
}

// FuzzDecodeForwarded feeds bodies to the controller's decoding of
// forwarded requests (the envelope's api key and version, then the body).
func FuzzDecodeForwarded(f *testing.F) {
	s := &Server{cfg: Config{MaxRequestSize: fuzzMaxRequest}}
	s.apis = s.apiTable()
	for key := range forwarded {
		a := s.apis[key]
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			populate(req)
			f.Add(key, v, req.AppendTo(nil))
		}
	}
	f.Fuzz(func(t *testing.T, key, version int16, raw []byte) {
		body, err := s.decodeForwarded(key, version, raw)
		if err != nil {
			if body != nil {
				t.Fatalf("decode failed (%v) but returned a body", err)
			}
			return
		}
		if !forwarded[key] || body.Key() != key || body.GetVersion() != version {
			t.Fatalf("decoded %s v%d for api %d v%d", kmsg.NameForKey(body.Key()), body.GetVersion(), key, version)
		}
	})
}
