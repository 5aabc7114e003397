package mirror

import (
	"testing"

	"weir/internal/tlsconf/tlstest"
)

// The mirror reads a source over SASL_PLAINTEXT (PLAIN) and writes a target
// over SSL, with the client properties MM2 takes for them.
func TestMirrorOverSASLAndTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	secured := func(proto string, extra map[string]string) map[string]string {
		o := map[string]string{
			"listeners":                      "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"advertised.listeners":           "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
			"inter.broker.listener.name":     "PLAINTEXT",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:" + proto + ",CONTROLLER:PLAINTEXT",
		}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	a := startClusterWith(t, secured("SASL_PLAINTEXT", map[string]string{
		"sasl.enabled.mechanisms":                     "PLAIN",
		"listener.name.secure.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_mirror="mirror-secret";`,
	}))
	b := startClusterWith(t, secured("SSL", map[string]string{
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": ca.Issue("broker", "").KeystoreFile(t, t.TempDir(), "broker.pem"),
	}))
	a.create(t, "orders", 2)
	a.produce(t, "orders", 2, 0, 20)

	props := mirrorProps(a, b, "A->B")
	props["A.bootstrap.servers"] = a.node.Server.Addr("SECURE").String()
	props["A.security.protocol"] = "SASL_PLAINTEXT"
	props["A.sasl.mechanism"] = "PLAIN"
	props["A.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="mirror-secret";`
	props["B.bootstrap.servers"] = b.node.Server.Addr("SECURE").String()
	props["B.security.protocol"] = "SSL"
	props["B.ssl.truststore.type"] = "PEM"
	props["B.ssl.truststore.certificates"] = string(ca.PEM)
	startMirror(t, props)
	checkCopy(t, a.readAll(t, "orders", 2, 20), b.readAll(t, "A.orders", 2, 20))
}
