package mailbox

import (
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Statements go to the server with their arguments in the text (one round
// trip, not prepare-execute-close) unless the connection's character set
// makes backslash escaping unsafe or the DSN decides for itself.
func TestInterpolateParams(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want bool
	}{
		{"root@tcp(127.0.0.1:3306)/mbx", true},
		{"root@tcp(127.0.0.1:3306)/mbx?charset=utf8mb4", true},
		{"root@tcp(127.0.0.1:3306)/mbx?charset=latin1", true},
		{"root@tcp(127.0.0.1:3306)/mbx?charset=gbk", false},
		{"root@tcp(127.0.0.1:3306)/mbx?charset=utf8mb4,sjis", false},
		{"root@tcp(127.0.0.1:3306)/mbx?collation=big5_chinese_ci", false},
		{"root@tcp(127.0.0.1:3306)/mbx?interpolateParams=false", false},
	} {
		cfg, err := mysql.ParseDSN(c.dsn)
		if err != nil {
			t.Fatalf("%s: %v", c.dsn, err)
		}
		interpolate(cfg, c.dsn)
		if cfg.InterpolateParams != c.want {
			t.Errorf("%s: interpolateParams %v, want %v", c.dsn, cfg.InterpolateParams, c.want)
		}
		if _, err := mysql.ParseDSN(cfg.FormatDSN()); err != nil {
			t.Errorf("%s: the DSN the mailbox opens is refused: %v", c.dsn, err)
		}
	}
}
