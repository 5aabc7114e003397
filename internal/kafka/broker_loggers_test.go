package kafka_test

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/servertest"
)

type loggerOp struct {
	name  string
	value *string
	op    kmsg.IncrementalAlterConfigOp
}

func setLogger(name, level string) loggerOp {
	return loggerOp{name, &level, kmsg.IncrementalAlterConfigOpSet}
}

func deleteLogger(name string) loggerOp {
	return loggerOp{name, nil, kmsg.IncrementalAlterConfigOpDelete}
}

// alterLoggers sends one IncrementalAlterConfigs of BROKER_LOGGER
// resources, each a name and its operations, and returns each resource's
// error code and message.
func (w *wire) alterLoggers(validateOnly bool, resources ...any) []string {
	w.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for i := 0; i < len(resources); i += 2 {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, resources[i].(string)
		for _, o := range resources[i+1].([]loggerOp) {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value, c.Op = o.name, o.value, o.op
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
	}
	resp := w.do(req).(*kmsg.IncrementalAlterConfigsResponse)
	var out []string
	for _, r := range resp.Resources {
		out = append(out, errName(r.ErrorCode, r.ErrorMessage))
	}
	return out
}

// errName is an error code's name, then its message if any.
func errName(code int16, msg *string) string {
	name := "NONE"
	if err := kerr.ErrorForCode(code); err != nil {
		name = err.(*kerr.Error).Message
	}
	if msg != nil {
		name += " " + *msg
	}
	return name
}

// describeLoggers returns the loggers of a BROKER_LOGGER resource, name
// -> level, or its error.
func (w *wire) describeLoggers(name string, names ...string) (map[string]string, string) {
	w.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBrokerLogger, name, names
	req.Resources = append(req.Resources, r)
	resp := w.do(req).(*kmsg.DescribeConfigsResponse)
	res := resp.Resources[0]
	if res.ErrorCode != 0 {
		return nil, errName(res.ErrorCode, res.ErrorMessage)
	}
	out := map[string]string{}
	for _, c := range res.Configs {
		if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.IsSensitive {
			w.t.Errorf("logger %s: source %v read-only %t sensitive %t", c.Name, c.Source, c.ReadOnly, c.IsSensitive)
		}
		out[c.Name] = str(c.Value)
	}
	return out, ""
}

// The BROKER_LOGGER resource of a real node: its loggers described, a
// component set to DEBUG logging at DEBUG (and only it), deleted back to
// the root's level, the root's level followed, and Kafka's errors.
func TestBrokerLoggers(t *testing.T) {
	var logs lockedBuffer
	n := servertest.Start(t, servertest.Options{Overrides: noAutoCreate, LogOutput: &logs})
	w := dial(t, n.Addr)
	level := func(name string) string {
		t.Helper()
		ls, msg := w.describeLoggers("1", name)
		if msg != "" || len(ls) != 1 {
			t.Fatalf("describe %s: %v %s", name, ls, msg)
		}
		return ls[name]
	}

	all, msg := w.describeLoggers("1")
	if msg != "" {
		t.Fatal(msg)
	}
	for _, name := range []string{"root", "network", "controller", "group-coordinator", "transaction-coordinator", "quorum", "publisher"} {
		if all[name] != "INFO" {
			t.Errorf("logger %s: %q, want INFO (loggers %v)", name, all[name], all)
		}
	}

	// A frame too short for a request header closes the connection,
	// which the network logger logs at DEBUG before closing it.
	const closing = `level=DEBUG msg="closing connection" component=network`
	badFrame := func() {
		t.Helper()
		b := dial(t, n.Addr)
		var sz [4]byte
		binary.BigEndian.PutUint32(sz[:], 1)
		b.write(sz[:])
		b.expectClosed()
	}
	badFrame()
	if strings.Contains(logs.String(), closing) {
		t.Fatalf("DEBUG logged at INFO:\n%s", logs.String())
	}

	if got := w.alterLoggers(false, "1", []loggerOp{setLogger("network", "DEBUG")}); !reflect.DeepEqual(got, []string{"NONE"}) {
		t.Fatalf("SET network=DEBUG: %v", got)
	}
	if level("network") != "DEBUG" || level("root") != "INFO" {
		t.Fatalf("after SET: network %s root %s", level("network"), level("root"))
	}
	if !strings.Contains(logs.String(), `level=WARN msg="updated the log level" component=network listener=PLAINTEXT logger=network level=DEBUG`) {
		t.Errorf("the change is not logged:\n%s", logs.String())
	}
	badFrame()
	if c := strings.Count(logs.String(), closing); c != 1 {
		t.Fatalf("%d DEBUG lines of the network logger at DEBUG, want 1:\n%s", c, logs.String())
	}

	if got := w.alterLoggers(false, "1", []loggerOp{deleteLogger("network")}); !reflect.DeepEqual(got, []string{"NONE"}) {
		t.Fatalf("DELETE network: %v", got)
	}
	if level("network") != "INFO" {
		t.Fatalf("after DELETE: network %s", level("network"))
	}
	badFrame()
	if c := strings.Count(logs.String(), closing); c != 1 {
		t.Fatalf("logged at DEBUG after DELETE:\n%s", logs.String())
	}

	// A component without its own level follows the root's.
	if got := w.alterLoggers(false, "1", []loggerOp{setLogger("root", "TRACE"), setLogger("quorum", "ERROR")}); !reflect.DeepEqual(got, []string{"NONE"}) {
		t.Fatalf("SET root=TRACE: %v", got)
	}
	if level("network") != "TRACE" || level("quorum") != "ERROR" {
		t.Fatalf("after SET root: network %s quorum %s", level("network"), level("quorum"))
	}
	badFrame()
	if c := strings.Count(logs.String(), closing); c != 2 {
		t.Fatalf("%d DEBUG lines with the root at TRACE, want 2", c)
	}
	w.alterLoggers(false, "1", []loggerOp{setLogger("root", "INFO"), deleteLogger("quorum")})

	before, _ := w.describeLoggers("1")
	null := loggerOp{"network", nil, kmsg.IncrementalAlterConfigOpSet}
	for _, c := range []struct {
		name string
		ops  []loggerOp
		want string
	}{
		{"1", []loggerOp{setLogger("quorum", "WARN"), {"network", kmsg.StringPtr("DEBUG"), kmsg.IncrementalAlterConfigOpAppend}},
			"INVALID_REQUEST APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{"1", []loggerOp{{"network", kmsg.StringPtr("DEBUG"), kmsg.IncrementalAlterConfigOpSubtract}},
			"INVALID_REQUEST SUBTRACT operation is not allowed for the BROKER_LOGGER resource"},
		{"1", []loggerOp{{"network", kmsg.StringPtr("DEBUG"), 7}},
			"INVALID_REQUEST Unknown operation type 7 is not allowed for the BROKER_LOGGER resource"},
		{"1", []loggerOp{setLogger("network", "WARN"), setLogger("kafka.server.KafkaApis", "DEBUG")},
			"INVALID_CONFIG Logger kafka.server.KafkaApis does not exist!"},
		{"1", []loggerOp{deleteLogger("nope")}, "INVALID_CONFIG Logger nope does not exist!"},
		{"1", []loggerOp{setLogger("network", "debug")},
			"INVALID_CONFIG Cannot set the log level of network to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{"1", []loggerOp{setLogger("root", "OFF")},
			"INVALID_CONFIG Cannot set the log level of root to OFF as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{"1", []loggerOp{deleteLogger("root")}, "INVALID_REQUEST Removing the log level of the root logger is not allowed"},
		{"1", []loggerOp{setLogger("network", "WARN"), setLogger("network", "ERROR")}, "INVALID_REQUEST Error due to duplicate config keys"},
		{"1", []loggerOp{null}, "INVALID_REQUEST Null value not supported for : network"},
		{"2", []loggerOp{setLogger("network", "WARN")}, "INVALID_REQUEST Unexpected node id. Expected 1, but received 2"},
		{"one", []loggerOp{setLogger("network", "WARN")}, "INVALID_REQUEST Node id must be an integer, but it is: one"},
		{"", []loggerOp{setLogger("network", "WARN")}, "INVALID_REQUEST Node id must be an integer, but it is: "},
	} {
		if got := w.alterLoggers(false, c.name, c.ops); !reflect.DeepEqual(got, []string{c.want}) {
			t.Errorf("%s %v: %v, want %s", c.name, c.ops, got, c.want)
		}
	}
	if got := w.alterLoggers(false, "1", []loggerOp{setLogger("network", "WARN")}, "1", []loggerOp{setLogger("quorum", "WARN")}); !reflect.DeepEqual(got,
		[]string{"INVALID_REQUEST Each resource must appear at most once.", "INVALID_REQUEST Each resource must appear at most once."}) {
		t.Errorf("a resource twice: %v", got)
	}
	if got := w.alterLoggers(true, "1", []loggerOp{setLogger("network", "WARN")}); !reflect.DeepEqual(got, []string{"NONE"}) {
		t.Errorf("validate only: %v", got)
	}
	if after, _ := w.describeLoggers("1"); !reflect.DeepEqual(after, before) {
		t.Errorf("refused or validate-only changes applied: %v, was %v", after, before)
	}

	for name, want := range map[string]string{
		"2":   "INVALID_REQUEST Unexpected broker id, expected 1 but received 2",
		"":    "INVALID_REQUEST Broker id must not be empty",
		"one": "INVALID_REQUEST Broker id must be an integer, but it is: one",
	} {
		if _, msg := w.describeLoggers(name); msg != want {
			t.Errorf("describe %q: %s, want %s", name, msg, want)
		}
	}

	// Legacy AlterConfigs never served broker loggers.
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "network", kmsg.StringPtr("DEBUG")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	res := w.do(req).(*kmsg.AlterConfigsResponse).Resources[0]
	if got := errName(res.ErrorCode, res.ErrorMessage); got != "INVALID_REQUEST Unknown resource type 8" {
		t.Errorf("legacy AlterConfigs: %s", got)
	}
	if level("network") != "INFO" {
		t.Errorf("legacy AlterConfigs applied: network %s", level("network"))
	}
}
