package pumppod

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/config"
)

// FeedDirectory holds the resolved configuration of every runnable feed,
// as this replica's reconciler last saw it. The read API finds a feed's
// database here. A nil *FeedDirectory ignores every call.
type FeedDirectory struct {
	mu    sync.RWMutex
	feeds map[types.NamespacedName]*config.Feed
}

// NewFeedDirectory returns an empty directory.
func NewFeedDirectory() *FeedDirectory {
	return &FeedDirectory{feeds: map[types.NamespacedName]*config.Feed{}}
}

// Lookup returns the feed key, or false when it does not exist or cannot
// run (invalid spec, missing Secret). The result must not be modified.
func (d *FeedDirectory) Lookup(key types.NamespacedName) (*config.Feed, bool) {
	if d == nil {
		return nil, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	f, ok := d.feeds[key]
	return f, ok
}

func (d *FeedDirectory) set(key types.NamespacedName, f *config.Feed) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.feeds[key] = f
}

func (d *FeedDirectory) remove(key types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.feeds, key)
}
