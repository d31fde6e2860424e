package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/testsupport/hostile"
)

// Every naming setting refuses every hostile value at validation: the file
// is refused with one line that names the field, shows the value quoted
// (no raw control character or bidi override reaches a terminal or a log)
// and nothing is dialled (Parse has no I/O).
func TestHostileIdentifiersAreRefused(t *testing.T) {
	for _, path := range hostile.NamingFields {
		name := strings.Join(path, ".")
		for i, v := range hostile.Values {
			doc := withSetting(t, path, v)
			_, err := config.Parse(doc)
			if err == nil {
				t.Errorf("%s = hostile value %d %q: accepted", name, i, v)
				continue
			}
			msg := err.Error()
			want := name
			if name == "kafka.brokers" {
				want = "kafka.brokers[0]"
			}
			if !strings.Contains(msg, want) {
				t.Errorf("%s = %q: error does not name the field: %s", name, v, msg)
			}
			if strings.ContainsAny(msg, "\n\r\x00\x1b\u202e") {
				t.Errorf("%s = %q: error carries a raw control character: %q", name, v, msg)
			}
		}
	}
}

// The same settings accept ordinary values, so the refusals above are not a
// validator that refuses everything.
func TestNamingFieldsAcceptOrdinaryValues(t *testing.T) {
	ordinary := map[string]string{
		"airport.iata": "PVG", "airport.timeZone": "America/Port-au-Prince",
		"mailbox.inbound.validStatus": "VALID", "kafka.brokers": "kafka-0.kafka.svc",
		"kafka.topics.state": "aodb.pek-state_v2", "kafka.topics.notice": "aodb.pek-notice_v2",
		"kafka.clientId": "flightfeed-pek.1", "kafka.transactionalIdPrefix": "ff.pek-1",
		"mailbox.tls.serverName": "mysql.aodb.example", "database.tls.serverName": "10.0.0.7",
		"kafka.tls.serverName": "broker.example", "requests.routingId": "AODB:PEK-1",
		"requests.sender": "RMS_2", "requests.receiver": "AODB#1",
	}
	for _, path := range hostile.NamingFields {
		name := strings.Join(path, ".")
		v, ok := ordinary[name]
		if !ok {
			v = "CMINMSGS_2$" // a table or column name
		}
		if _, err := config.Parse(withSetting(t, path, v)); err != nil {
			t.Errorf("%s = %q refused: %v", name, v, err)
		}
	}
}

// withSetting is the minimal config file with one setting replaced (a
// broker entry gets a port after the value).
func withSetting(t *testing.T, path []string, v string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(minimal), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if last == "brokers" {
		m[last] = []any{v + ":9092"}
	} else {
		m[last] = v
	}
	if last == "notice" {
		doc["kafka"].(map[string]any)["topics"].(map[string]any)["state"] = "KAFKA_STATE_OTHER"
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every string of the FlightFeed resource is constrained by the API server
// itself (a pattern or an enum), except the free durations and sizes that
// carry their own CEL rule and the ones listed with a reason: a new naming
// field without a pattern fails here, before a hostile value can reach it.
func TestEveryCRDStringIsConstrained(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "flightfeed.aero_flightfeeds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var walk func(path string, s schema)
	walk = func(path string, s schema) {
		switch s.Type {
		case "object":
			for k, v := range s.Properties {
				walk(path+"."+k, v)
			}
		case "array":
			if s.Items != nil {
				walk(path+"[]", *s.Items)
			}
		case "string":
			seen = append(seen, path)
			if kubernetesCoreType(path) {
				return
			}
			if s.Pattern == "" && len(s.Enum) == 0 {
				t.Errorf("%s: a string without a pattern or an enum", path)
			}
			if s.Pattern != "" && s.MaxLength == nil && !boundedPattern(s.Pattern) {
				t.Errorf("%s: pattern %s without maxLength", path, s.Pattern)
			}
		}
	}
	for _, v := range crd.Spec.Versions {
		walk("spec", v.Schema.OpenAPIV3Schema.Properties["spec"])
	}
	for _, must := range []string{"spec.mailbox.inbound.table", "spec.requests.sender", "spec.kafka.tls.serverName"} {
		if !slices.Contains(seen, must) {
			t.Errorf("the walk missed %s: %v", must, seen)
		}
	}
}

// kubernetesCoreType: the pump pods' resources and placement are
// Kubernetes' own types (corev1), copied as they are into the pump
// Deployment, where the API server validates every field again; they never
// reach a DSN, a statement, a label value of ours or a log line. A value the
// API server refuses there is reported in status.pumpPods.waiting.
func kubernetesCoreType(path string) bool {
	for _, p := range []string{"spec.pump.resources.", "spec.pump.tolerations[].", "spec.pump.affinity.", "spec.pump.topologySpreadConstraints[]."} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// boundedPattern: the pattern itself bounds the length (no + or *, only
// counted repetitions such as {0,63}).
func boundedPattern(p string) bool {
	return !strings.ContainsAny(p, "+*")
}

type schema struct {
	Type       string            `json:"type"`
	Properties map[string]schema `json:"properties"`
	Items      *schema           `json:"items"`
	Pattern    string            `json:"pattern"`
	Enum       []any             `json:"enum"`
	MaxLength  *int              `json:"maxLength"`
}
