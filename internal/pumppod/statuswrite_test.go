package pumppod

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/serving"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// frozenCache answers with the FlightFeed as it was when it was made: a
// cache that has not seen the latest write yet.
type frozenCache struct {
	client.Reader
	ff *v1alpha1.FlightFeed
}

func (c frozenCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.ff.DeepCopyInto(obj.(*v1alpha1.FlightFeed))
	return nil
}

// A report that changes nothing (an idle feed's) reads the manager's cache
// and makes no call to the API server; a write made from a cache that lags
// behind another writer conflicts and is made again from a fresh read,
// keeping the other writer's change.
func TestStatusWriterReadsTheCacheFirst(t *testing.T) {
	scheme, err := serving.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := types.NamespacedName{Namespace: "airport", Name: "pek"}
	ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ff).WithStatusSubresource(ff).Build()
	api := &countingReader{Reader: c}
	w := statusWriter{cached: c, reader: api, writer: c}

	setGen := func(g int64) func(*v1alpha1.FlightFeedStatus) {
		return func(st *v1alpha1.FlightFeedStatus) { st.ObservedGeneration = g }
	}
	if wrote, err := w.update(ctx, key, "uid-1", setGen(3)); err != nil || !wrote {
		t.Fatalf("first write: wrote %v, %v", wrote, err)
	}
	api.gets.Store(0)
	for range 5 {
		if wrote, err := w.update(ctx, key, "uid-1", setGen(3)); err != nil || wrote {
			t.Fatalf("unchanged report: wrote %v, %v", wrote, err)
		}
	}
	if n := api.gets.Load(); n != 0 {
		t.Fatalf("unchanged reports read the API server %d times, want 0", n)
	}

	// The cache keeps the object as it is now; another writer (the
	// operator's status.pumpPods) then writes.
	var before v1alpha1.FlightFeed
	if err := c.Get(ctx, key, &before); err != nil {
		t.Fatal(err)
	}
	other := before.DeepCopy()
	other.Status.PumpPods = &v1alpha1.PumpPodsStatus{Replicas: 2}
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	w.cached = frozenCache{Reader: c, ff: &before}
	if wrote, err := w.update(ctx, key, "uid-1", setGen(4)); err != nil || !wrote {
		t.Fatalf("write from a lagging cache: wrote %v, %v", wrote, err)
	}
	if n := api.gets.Load(); n != 1 {
		t.Fatalf("after the conflict: %d fresh reads, want 1", n)
	}
	var after v1alpha1.FlightFeed
	if err := c.Get(ctx, key, &after); err != nil {
		t.Fatal(err)
	}
	if after.Status.ObservedGeneration != 4 || after.Status.PumpPods == nil || after.Status.PumpPods.Replicas != 2 {
		t.Fatalf("status after the retry: %+v", after.Status)
	}

	// A cache that has not seen the feed (or sees another UID) is not
	// believed: the API server is asked.
	w.cached = frozenCache{Reader: c, ff: &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-0"}}}
	api.gets.Store(0)
	if wrote, err := w.update(ctx, key, "uid-1", setGen(4)); err != nil || wrote {
		t.Fatalf("unchanged report past a stale cache: wrote %v, %v", wrote, err)
	}
	if n := api.gets.Load(); n != 1 {
		t.Fatalf("stale cache: %d fresh reads, want 1", n)
	}
}
