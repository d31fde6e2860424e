package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// withReferenceData is the minimal file with requests.referenceData set to
// the flow mapping inner.
func withReferenceData(inner string) string {
	return strings.Replace(minimal, "routingId: AODB}", "routingId: AODB, referenceData: "+inner+"}", 1)
}

// Reference-data requests are off unless types are listed; the interval
// defaults to 24h and the routing id to requests.routingId.
func TestReferenceDataRequestsDefaults(t *testing.T) {
	feed, err := config.Parse([]byte(strings.Replace(minimal, "routingId: AODB", "routingId: SCHEDULES", 1)))
	if err != nil {
		t.Fatal(err)
	}
	rd := feed.Spec.Requests.ReferenceData
	if got := config.ReferenceRequestTypes(rd); len(got) != 0 || len(rd.Types) != 0 {
		t.Fatalf("types %v (resolved %v), want none by default", rd.Types, got)
	}
	if rd.Interval == nil || rd.Interval.Duration != 24*time.Hour {
		t.Fatalf("interval %v, want 24h", rd.Interval)
	}
	if got := config.ReferenceRoutingID(feed.Spec.Requests); rd.RoutingID != "" || got != "SCHEDULES" {
		t.Fatalf("routing id %q (stored %q), want requests.routingId SCHEDULES (stored empty: a CRD default cannot name another field)", got, rd.RoutingID)
	}

	feed, err = config.Parse([]byte(withReferenceData("{types: [gates], interval: 6h, routingId: REFDATA}")))
	if err != nil {
		t.Fatal(err)
	}
	rd = feed.Spec.Requests.ReferenceData
	if rd.Interval.Duration != 6*time.Hour || rd.RoutingID != "REFDATA" || feed.Spec.Requests.RoutingID != "AODB" {
		t.Fatalf("given interval %v and routing id %q (requests.routingId %q)", rd.Interval, rd.RoutingID, feed.Spec.Requests.RoutingID)
	}
}

// Each entry is a SIS TYPE or a list name, in any case, or all; the pump
// gets SIS TYPEs, sorted, each once.
func TestReferenceRequestTypes(t *testing.T) {
	every := make([]string, 0, 23)
	for _, k := range sis.ReferenceKinds() {
		every = append(every, k.Type)
	}
	slices.Sort(every)
	if len(every) != 23 {
		t.Fatalf("the catalogue has %d types, want the interface's 23", len(every))
	}
	tests := []struct {
		types string
		want  []string
	}{
		{"[GLST]", []string{"GLST"}},
		{"[gates, AIRL]", []string{"AIRL", "GLST"}},
		{"[Gates, glst, GLST]", []string{"GLST"}},
		{"[aircraft-types, VIP-PERSONS]", []string{"AIRC", "VIPL"}},
		{"[all]", every},
		{"[GLST, ALL]", every},
		{"[]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.types, func(t *testing.T) {
			feed, err := config.Parse([]byte(withReferenceData("{types: " + tt.types + "}")))
			if err != nil {
				t.Fatal(err)
			}
			if got := config.ReferenceRequestTypes(feed.Spec.Requests.ReferenceData); !slices.Equal(got, tt.want) {
				t.Fatalf("types %s resolve to %v, want %v", tt.types, got, tt.want)
			}
		})
	}
}

func TestBadReferenceDataRequestsNameTheField(t *testing.T) {
	tests := []struct {
		name, inner string
		wantErr     []string
	}{
		{"unknown type", "{types: [GLST, gate]}", []string{
			`requests.referenceData.types[1]: Invalid value: "gate"`,
			"must be all or a reference-data type, by its SIS TYPE or list name (case-insensitive): ABDG (airbridges), ABNR (abnormal-reasons),",
			"GLST (gates)", "VIPS (vip-services)"}},
		{"a flight type", "{types: [SCHD]}", []string{`requests.referenceData.types[0]: Invalid value: "SCHD"`}},
		{"markup", `{types: ["GLST</RTYP>"]}`, []string{`requests.referenceData.types[0]`}},
		{"interval too short", "{types: [GLST], interval: 30s}", []string{"requests.referenceData.interval", "at least 1m0s"}},
		{"routing id with a space", `{types: [GLST], routingId: "REF DATA"}`, []string{"requests.referenceData.routingId", "letters, digits"}},
		{"routing id too long", "{types: [GLST], routingId: " + strings.Repeat("R", 65) + "}", []string{"requests.referenceData.routingId", "64"}},
		{"too many", "{types: [" + strings.TrimSuffix(strings.Repeat("GLST, ", 65), ", ") + "]}", []string{"requests.referenceData.types", "64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(withReferenceData(tt.inner)))
			if err == nil {
				t.Fatal("accepted, want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}
