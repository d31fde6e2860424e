package pumppod_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// An older release leading a feed whose database a newer release already
// migrated refuses to build the pump: Ready and PumpRunning say
// SchemaTooNew, a warning Event says it, status.schemaVersion shows the
// database's version, and no runner is ever built. Once the database is
// at the binary's version again (the newer migration rolled back) the same
// leader starts the pump and status.schemaVersion follows.
func TestSchemaTooNewRefusesThePump(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx()
	if _, err := store.Migrate(ctx, h.pgDSN); err != nil {
		t.Fatal(err)
	}
	_, known, err := store.SchemaVersion(ctx, h.pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, h.pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+1); err != nil {
		t.Fatal(err)
	}

	h.secrets("pek")
	h.startReplica("replica-a")
	key := h.feed("pek")
	ff := h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSchemaTooNew)
	h.waitCondition(key, v1alpha1.ConditionPumpRunning, metav1.ConditionFalse, v1alpha1.ReasonSchemaTooNew)
	h.waitCondition(key, v1alpha1.ConditionDatabaseReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)
	if ff.Status.SchemaVersion != known+1 {
		t.Fatalf("status.schemaVersion %d, want the database's %d", ff.Status.SchemaVersion, known+1)
	}
	h.waitEvent(key, pumppod.ReasonSchemaTooNew, fmt.Sprintf("the database is at version %d, this binary knows up to %d", known+1, known))
	if rs := h.runners.all(); len(rs) != 0 {
		t.Fatalf("a pump was built on a newer schema: %s", describe(rs[0]))
	}

	// The newer release's migration is rolled back: the leader notices at
	// its next check and runs the pump on its own schema.
	if _, err := conn.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = $1`, known+1); err != nil {
		t.Fatal(err)
	}
	h.waitReady(key)
	await.Eventually(t, "status.schemaVersion back at the binary's", waitLong, func() (bool, string) {
		ff, err := h.getFeed(key)
		if err != nil {
			return false, err.Error()
		}
		return ff.Status.SchemaVersion == known, fmt.Sprint(ff.Status.SchemaVersion)
	})
}

// database.autoMigrate false leaves an empty database alone and refuses it
// with SchemaTooOld until `flightfeed migrate` ran; then the pump starts.
func TestSchemaTooOldWithoutAutoMigrate(t *testing.T) {
	h := newHarness(t)
	h.secrets("pek")
	h.startReplica("replica-a")
	key := h.feed("pek", "{name: pek-db, key: dsn}}", "{name: pek-db, key: dsn}, autoMigrate: false}")
	ff := h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSchemaTooOld)
	c := meta.FindStatusCondition(ff.Status.Conditions, string(v1alpha1.ConditionReady))
	if !strings.Contains(c.Message, "flightfeed migrate") {
		t.Fatalf("Ready message does not say what to do: %s", c.Message)
	}
	h.waitEvent(key, pumppod.ReasonSchemaTooOld, "autoMigrate is false")
	if cur, _, err := store.SchemaVersion(h.ctx(), h.pgDSN); err != nil || cur != 0 {
		t.Fatalf("the refused database was migrated to %d (%v)", cur, err)
	}
	if rs := h.runners.all(); len(rs) != 0 {
		t.Fatalf("a pump was built on an old schema: %s", describe(rs[0]))
	}
	if _, err := store.Migrate(h.ctx(), h.pgDSN); err != nil {
		t.Fatal(err)
	}
	h.waitReady(key)
}
