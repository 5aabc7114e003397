package kafka

// The BROKER_LOGGER config resource (KIP-412): this node's loggers
// (internal/loglevel: the root and one per component) described and their
// levels changed at run time by IncrementalAlterConfigs, with the checks
// and messages of Kafka's ConfigHelper and RuntimeLoggerManager. The
// levels are not stored: a restart goes back to the configured ones, as
// Kafka's do. The resource name is this node's id; another node must be
// asked itself.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/acl"
	"weir/internal/loglevel"
)

// apiError is a Kafka error code with the message to answer it with.
type apiError struct {
	code *kerr.Error
	msg  string
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.code }

func invalidRequest(format string, args ...any) error {
	return &apiError{kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}

// describeLoggers answers DescribeConfigs for one BROKER_LOGGER resource
// (already authorized): every logger, or those of names if any, with its
// level, as DYNAMIC_BROKER_LOGGER_CONFIG entries.
func (s *Server) describeLoggers(rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	self := s.cfg.Broker.NodeID
	var err error
	switch id, perr := strconv.ParseInt(rr.ResourceName, 10, 32); {
	case rr.ResourceName == "":
		err = invalidRequest("Broker id must not be empty")
	case perr != nil:
		err = invalidRequest("Broker id must be an integer, but it is: %s", rr.ResourceName)
	case int32(id) != self:
		err = invalidRequest("Unexpected broker id, expected %d but received %s", self, rr.ResourceName)
	case s.deps.Loggers == nil:
		err = invalidRequest("Unsupported resource type %d.", rr.ResourceType)
	}
	if err != nil {
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		return
	}
	want := map[string]bool{}
	for _, n := range rr.ConfigNames {
		want[n] = true
	}
	for _, lg := range s.deps.Loggers.Loggers() {
		if len(want) > 0 && !want[lg.Name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = lg.Name, kmsg.StringPtr(lg.Level)
		c.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		res.Configs = append(res.Configs, c)
	}
}

// alterLoggers applies one BROKER_LOGGER resource of IncrementalAlterConfigs:
// every operation is checked before any is applied.
func (s *Server) alterLoggers(req *Request, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return invalidRequest("Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return invalidRequest("Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	if !s.authorizedCluster(req, acl.OpAlterConfigs) {
		return &apiError{kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Message}
	}
	self := s.cfg.Broker.NodeID
	if id, err := strconv.ParseInt(rr.ResourceName, 10, 32); err != nil {
		return invalidRequest("Node id must be an integer, but it is: %s", rr.ResourceName)
	} else if int32(id) != self {
		return invalidRequest("Unexpected node id. Expected %d, but received %s", self, rr.ResourceName)
	}
	ls := s.deps.Loggers
	if ls == nil {
		return invalidRequest("Unknown resource type %d", rr.ResourceType)
	}
	for _, c := range rr.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
			if !ls.Exists(c.Name) {
				return &apiError{kerr.InvalidConfig, fmt.Sprintf("Logger %s does not exist!", c.Name)}
			}
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if _, ok := loglevel.ParseLevel(*c.Value); !ok {
				return &apiError{kerr.InvalidConfig, fmt.Sprintf("Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
					c.Name, *c.Value, loglevel.ValidLevels)}
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if c.Name == loglevel.Root {
				return invalidRequest("Removing the log level of the %s logger is not allowed", loglevel.Root)
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return invalidRequest("%s operation is not allowed for the BROKER_LOGGER resource", c.Op)
		default:
			return invalidRequest("Unknown operation type %d is not allowed for the BROKER_LOGGER resource", int8(c.Op))
		}
	}
	if validateOnly {
		return nil
	}
	for _, c := range rr.Configs {
		if c.Op == kmsg.IncrementalAlterConfigOpSet {
			l, _ := loglevel.ParseLevel(*c.Value)
			ls.Set(c.Name, l)
			s.lg.Warn("updated the log level", "logger", c.Name, "level", *c.Value, "principal", req.Principal)
		} else {
			ls.Unset(c.Name)
			s.lg.Warn("unset the log level", "logger", c.Name, "principal", req.Principal)
		}
	}
	return nil
}

// legacyAlterLoggers is the legacy AlterConfigs' answer for a
// BROKER_LOGGER resource: Kafka's checks of the configs, then the refusal
// of the type, which that API never served.
func legacyAlterLoggers(rr kmsg.AlterConfigsRequestResource) error {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return invalidRequest("Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return invalidRequest("Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	return invalidRequest("Unknown resource type %d", rr.ResourceType)
}
