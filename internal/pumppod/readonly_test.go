package pumppod_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// SQLSTATEs of a refused write.
const (
	readOnlyTransaction = "25006" // read_only_sql_transaction
	insufficientPrivs   = "42501" // insufficient_privilege
)

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// With only the writer's DSN, the read API's pool opens every session
// read-only: a write through it fails, reads work.
func TestReadAPIPoolRefusesWrites(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.New(t)
	seed(t, dsn)
	s, err := readapi.OpenReadStore(ctx, dsn, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if states, err := s.ReadFlights(ctx, store.Filter{}); err != nil || len(states) != 4 {
		t.Fatalf("read: %d flights, %v", len(states), err)
	}
	if _, err := s.TakeEpoch(ctx, "intruder"); sqlState(err) != readOnlyTransaction {
		t.Fatalf("a write through the read API's pool: %v, want SQLSTATE %s", err, readOnlyTransaction)
	}
}

// readOnlyRole creates a login role of the local server that may only read
// the database dsn (docs/security.md's grants) and returns its DSN and a function
// running SQL as the admin in that database. Dropped when t ends.
func readOnlyRole(t *testing.T, dsn string) (string, func(sql string)) {
	t.Helper()
	role := "ff_reader_" + utilrand.String(8)
	admin, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := pgx.Identifier{u.Path[1:]}.Sanitize()
	id := pgx.Identifier{role}.Sanitize()
	exec("CREATE ROLE " + id + " LOGIN")
	t.Cleanup(func() {
		// A fresh context on purpose: the test's own is done. Privileges go
		// first, or the role cannot be dropped.
		_, _ = admin.Exec(context.Background(), "DROP OWNED BY "+id)
		_, _ = admin.Exec(context.Background(), "DROP ROLE "+id)
		_ = admin.Close(context.Background())
	})
	for _, grant := range []string{
		"GRANT CONNECT ON DATABASE " + db + " TO " + id,
		"GRANT USAGE ON SCHEMA public TO " + id,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + id,
		"ALTER ROLE " + id + " SET default_transaction_read_only = on",
	} {
		exec(grant)
	}
	u.User = url.User(role)
	return u.String(), exec
}

// With spec.database.readDsnSecretRef, the read API reads as that role —
// a role that cannot write at all — and the status says so; without it,
// the status says the sessions are read-only.
func TestReadAPIReadsAsTheReadOnlyRole(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.New(t)
	states := seed(t, dsn)
	readDSN, asAdmin := readOnlyRole(t, dsn)

	// The role is read-only whatever the session asks.
	direct, err := store.Open(ctx, readDSN, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = direct.TakeEpoch(ctx, "intruder")
	direct.Close()
	if code := sqlState(err); code != readOnlyTransaction && code != insufficientPrivs {
		t.Fatalf("a write as the read-only role: %v", err)
	}

	srv := serveDB(t, dsn, states, readDSN)
	if got := flids(t, srv.list(t, nil)); got != "1,2,3,4" {
		t.Fatalf("read as the read-only role: %s", got)
	}
	c := kubetest.Client(t, restCfg)
	await.Eventually(t, "status.readApi.databaseAccess ReadOnlyRole", waitLong, func() (bool, string) {
		var ff v1alpha1.FlightFeed
		if err := c.Get(ctx, types.NamespacedName{Namespace: srv.ns, Name: "pek"}, &ff); err != nil {
			return false, err.Error()
		}
		return ff.Status.ReadAPI != nil && ff.Status.ReadAPI.DatabaseAccess == v1alpha1.ReadAPIReadOnlyRole, fmt.Sprintf("%+v", ff.Status.ReadAPI)
	})

	// Proof that the reads are the role's: take its SELECT away and the
	// read API cannot read any more (the writer still could).
	asAdmin("REVOKE SELECT ON ALL TABLES IN SCHEMA public FROM " + pgx.Identifier{mustUser(t, readDSN)}.Sanitize())
	if code, body := srv.get(t, srv.flights()); code != http.StatusServiceUnavailable {
		t.Fatalf("after REVOKE SELECT from the read-only role: %d %s, want 503", code, body)
	}
}

func mustUser(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.User.Username()
}
