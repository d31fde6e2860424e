package flight

import "testing"

func TestFieldTableShape(t *testing.T) {
	counts := map[Kind]int{}
	for _, f := range Fields() {
		counts[f.Kind]++
		if f.Tag == "FLID" {
			t.Fatal("FLID is the identity, not a field")
		}
		if got, ok := Lookup(f.Tag); !ok || got.Tag != f.Tag {
			t.Fatalf("Lookup(%s) failed", f.Tag)
		}
		if f.Kind == KindCollection && f.Tag != "DELY" && f.SeqAttr == "" {
			t.Errorf("collection %s has no sequence attribute", f.Tag)
		}
	}
	want := map[Kind]int{KindScalar: 55, KindCollection: 10, KindAnomaly: 3, KindRecord: 6}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s fields = %d, want %d", k, counts[k], n)
		}
	}
	if _, ok := Lookup("NOPE"); ok || FieldOrder("NOPE") != -1 {
		t.Fatal("unknown tag found")
	}
	for _, tag := range []string{"SODT", "CNCL", "NAAT", "NEAT"} {
		if f, _ := Lookup(tag); f.TypedTimeColumn == "" {
			t.Errorf("%s has no typed time column", tag)
		}
	}
	if f, _ := Lookup("ERUT"); f.RouteKind != "ERUT" || f.Table != "flight_route_point" {
		t.Errorf("ERUT spec = %+v", f)
	}
}
