package server

import "weir/internal/config"

// singleNodeDefaults are the keys a single node changes from Kafka's
// defaults, as Kafka's own single-node server.properties does: internal
// topics cannot have three replicas on one broker.
var singleNodeDefaults = map[string]string{
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
}

// LoadConfig validates server properties into a broker configuration. A
// node that is the only voter of its own quorum (the zero-setup default)
// gets singleNodeDefaults for the keys the properties leave unset.
// Warnings name unknown keys.
func LoadConfig(props map[string]string) (*config.Broker, []string, error) {
	cfg, warnings, err := config.LoadBroker(props)
	if err != nil || !SingleNode(cfg) {
		return cfg, warnings, err
	}
	withDefaults := make(map[string]string, len(props)+len(singleNodeDefaults))
	for k, v := range singleNodeDefaults {
		withDefaults[k] = v
	}
	for k, v := range props {
		withDefaults[k] = v
	}
	return config.LoadBroker(withDefaults)
}

// SingleNode reports whether cfg describes a node that is both broker and
// controller and the only voter of its quorum: such a node may format its
// own storage and needs no other node to work.
func SingleNode(cfg *config.Broker) bool {
	return cfg.HasRole("controller") && cfg.HasRole("broker") &&
		len(cfg.QuorumVoters) == 1 && cfg.QuorumVoters[0].ID == cfg.NodeID
}
