package sqlview_test

import (
	"fmt"
	"testing"

	"github.com/loci-dev/loci/dbadmin/sqlview"
)

func TestSmoke(t *testing.T) {
	e := sqlview.New(filled(t, 8), defaults())
	for _, q := range []string{"SHOW TABLES", "DESCRIBE drawers", "SELECT * FROM wings", "SELECT * FROM rooms", "SELECT id, room, name, tags, current, created_at FROM drawers",
		"SELECT * FROM similar", "SELECT * FROM entities", "SELECT * FROM aliases", "SELECT * FROM mentions", "SELECT * FROM relationships",
		"SELECT * FROM relationship_links", "SELECT * FROM entity_links", "SELECT * FROM jobs", "SELECT * FROM sources", "SELECT * FROM documents", "SELECT * FROM triggers",
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'palace'"} {
		r := one(t, e, q, nil)
		fmt.Println(q, r.Columns, r.RowsRead)
		for _, row := range r.Rows {
			fmt.Println("  ", row)
		}
	}
}
