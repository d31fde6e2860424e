package secretconsent_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/flightfeed/flightfeed/internal/secretconsent"
)

func TestCheckFeed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		present bool
		feed    string
		want    error
		with    string // the value that would add the feed
	}{
		{"missing", "", false, "pek", secretconsent.ErrMissing, ""},
		{"named alone", "pek", true, "pek", nil, "pek"},
		{"named among others", "pek,pvg", true, "pvg", nil, "pek,pvg"},
		{"spaces around items", " pek , pvg ", true, "pvg", nil, "pek,pvg"},
		{"every feed", "*", true, "anything", nil, "*"},
		{"every feed with spaces", " * ", true, "pvg", nil, "*"},
		{"another feed only", "pek", true, "pvg", secretconsent.ErrNotNamed, "pek,pvg"},
		{"no prefix match", "pek", true, "pe", secretconsent.ErrNotNamed, "pek,pe"},
		{"no suffix match", "pek-a", true, "pek", secretconsent.ErrNotNamed, "pek-a,pek"},
		{"case matters: object names are lower case", "PEK", true, "pek", secretconsent.ErrInvalid, ""},
		{"repeats folded", "pek,pek", true, "pvg", secretconsent.ErrNotNamed, "pek,pvg"},
		{"empty value", "", true, "pek", secretconsent.ErrInvalid, ""},
		{"blank value", "  ", true, "pek", secretconsent.ErrInvalid, ""},
		{"empty item", "pek,,pvg", true, "pek", secretconsent.ErrInvalid, ""},
		{"trailing comma", "pek,", true, "pek", secretconsent.ErrInvalid, ""},
		{"star among names", "pek,*", true, "pek", secretconsent.ErrInvalid, ""},
		{"glob", "pe*", true, "pek", secretconsent.ErrInvalid, ""},
		{"not a name", "pek/pvg", true, "pek", secretconsent.ErrInvalid, ""},
		{"namespace/name is not a name", "default/pek", true, "pek", secretconsent.ErrInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := secretconsent.CheckFeed(tc.value, tc.present, tc.feed)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("CheckFeed(%q, %v, %q) = %v, want %v", tc.value, tc.present, tc.feed, err, tc.want)
			}
			if tc.with != "" {
				if got := f.With(tc.feed); got != tc.with {
					t.Fatalf("With(%q) = %q, want %q", tc.feed, got, tc.with)
				}
			}
		})
	}
}

func TestParseBroker(t *testing.T) {
	for _, tc := range []struct {
		entry string
		want  secretconsent.Broker
		err   bool
	}{
		{"kafka-1.example:9093", secretconsent.Broker{Host: "kafka-1.example", Port: 9093}, false},
		{"kafka-1.example", secretconsent.Broker{Host: "kafka-1.example"}, false},
		{" Kafka-1.Example:9093 ", secretconsent.Broker{Host: "Kafka-1.Example", Port: 9093}, false},
		{"10.0.0.7:9092", secretconsent.Broker{Host: "10.0.0.7", Port: 9092}, false},
		{"10.0.0.7", secretconsent.Broker{Host: "10.0.0.7"}, false},
		{"[::1]:9092", secretconsent.Broker{Host: "::1", Port: 9092}, false},
		{"[fd00::7]", secretconsent.Broker{Host: "fd00::7"}, false},
		{"fd00::7", secretconsent.Broker{Host: "fd00::7"}, false},
		{"localhost:09092", secretconsent.Broker{Host: "localhost", Port: 9092}, false},
		{"", secretconsent.Broker{}, true},
		{":9092", secretconsent.Broker{}, true},
		{"kafka:", secretconsent.Broker{}, true},
		{"kafka:0", secretconsent.Broker{}, true},
		{"kafka:65536", secretconsent.Broker{}, true},
		{"kafka:+9092", secretconsent.Broker{}, true},
		{"kafka:port", secretconsent.Broker{}, true},
		{"*.example:9093", secretconsent.Broker{}, true},
		{"*", secretconsent.Broker{}, true},
		{"kafka_1.example:9093", secretconsent.Broker{}, true},
		{"-kafka.example", secretconsent.Broker{}, true},
		{"kafka..example", secretconsent.Broker{}, true},
		{"user:pw@kafka:9093", secretconsent.Broker{}, true},
		{"[kafka]:9093", secretconsent.Broker{}, true},
		{"[10.0.0.7]:9093", secretconsent.Broker{}, true},
		{"[::1", secretconsent.Broker{}, true},
		{"[::1]9092", secretconsent.Broker{}, true},
		{"[::1]:", secretconsent.Broker{}, true},
		{"kafka.example/9093", secretconsent.Broker{}, true},
	} {
		got, err := secretconsent.ParseBroker(tc.entry)
		if tc.err {
			if !errors.Is(err, secretconsent.ErrInvalid) {
				t.Errorf("ParseBroker(%q) = %+v, %v; want ErrInvalid", tc.entry, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBroker(%q) = %+v, %v; want %+v", tc.entry, got, err, tc.want)
		}
	}
}

// TestBrokerMatching: the rules the security documentation states. Exact
// host, case-insensitive; IP addresses as addresses, never resolved; the
// port must match when the entry gives one.
func TestBrokerMatching(t *testing.T) {
	for _, tc := range []struct {
		entry, broker string
		want          bool
	}{
		{"kafka-1.example:9093", "kafka-1.example:9093", true},
		{"kafka-1.example:9093", "KAFKA-1.EXAMPLE:9093", true},
		{"KAFKA-1.example:9093", "kafka-1.Example:9093", true},
		{"kafka-1.example:9093", "kafka-1.example:9092", false},
		{"kafka-1.example", "kafka-1.example:9092", true},
		{"kafka-1.example", "kafka-1.example:1", true},
		{"kafka-1.example:9093", "kafka-1.example.evil.test:9093", false},
		{"example:9093", "kafka-1.example:9093", false},
		{"kafka-1.example:9093", "kafka-1.example.:9093", false},
		{"kafka-1.example:9093", "evil-kafka-1.example:9093", false},
		{"kafka-1:9093", "kafka-1.example:9093", false},
		{"10.0.0.7:9092", "10.0.0.7:9092", true},
		{"10.0.0.7:9092", "10.0.0.70:9092", false},
		{"10.0.0.7", "10.0.0.7:19092", true},
		{"[::1]:9092", "[0:0:0:0:0:0:0:1]:9092", true},
		{"::1", "[::1]:9092", true},
		{"[::ffff:10.0.0.7]:9092", "10.0.0.7:9092", true},
		{"localhost:9092", "127.0.0.1:9092", false},
		{"127.0.0.1:9092", "localhost:9092", false},
		{"kafka-1.example:09093", "kafka-1.example:9093", true},
		{"kafka-1.example:9093", "kafka-1.example", false},
	} {
		b, err := secretconsent.ParseBroker(tc.entry)
		if err != nil {
			t.Fatalf("ParseBroker(%q): %v", tc.entry, err)
		}
		if got := b.Allows(tc.broker); got != tc.want {
			t.Errorf("%q allows %q = %v, want %v", tc.entry, tc.broker, got, tc.want)
		}
	}
}

func TestCheckBrokers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		present bool
		brokers []string
		err     error
		refused []string
		with    string
	}{
		{"all allowed", "kafka-1.example:9093,kafka-2.example:9093", true,
			[]string{"kafka-2.example:9093", "kafka-1.example:9093"}, nil, nil, ""},
		{"hosts without ports", "kafka-1.example, kafka-2.example", true,
			[]string{"kafka-1.example:9093", "kafka-2.example:19093"}, nil, nil, ""},
		{"one refused", "kafka-1.example:9093", true,
			[]string{"kafka-1.example:9093", "evil.test:9093"}, secretconsent.ErrNotAllowed, []string{"evil.test:9093"},
			"kafka-1.example:9093,evil.test:9093"},
		{"missing refuses every broker", "", false,
			[]string{"kafka-1.example:9093", "kafka-2.example:9093", "kafka-1.example:9093"}, secretconsent.ErrMissing,
			[]string{"kafka-1.example:9093", "kafka-2.example:9093"}, "kafka-1.example:9093,kafka-2.example:9093"},
		{"empty", "", true, []string{"kafka-1.example:9093"}, secretconsent.ErrInvalid, nil, ""},
		{"empty item", "kafka-1.example:9093,", true, []string{"kafka-1.example:9093"}, secretconsent.ErrInvalid, nil, ""},
		{"one bad entry spoils the value", "kafka-1.example:9093,*.example", true, []string{"kafka-1.example:9093"}, secretconsent.ErrInvalid, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, refused, err := secretconsent.CheckBrokers(tc.value, tc.present, tc.brokers)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if !slices.Equal(refused, tc.refused) {
				t.Fatalf("refused %q, want %q", refused, tc.refused)
			}
			if tc.with != "" {
				if got := secretconsent.BrokersWith(allowed, refused); got != tc.with {
					t.Fatalf("BrokersWith = %q, want %q", got, tc.with)
				}
			}
		})
	}
}
