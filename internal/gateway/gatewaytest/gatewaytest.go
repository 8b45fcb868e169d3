// Package gatewaytest reads a gateway's ledger for tests, row by row, with
// plain SQL: what the gateway recorded, not what its own queries sum. It
// is imported only from _test.go files.
package gatewaytest

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/gateway"
)

// Request is one row of the ledger: a request and what it was charged.
type Request struct {
	Agent, Outcome, Model string
	// Tokens are every token the request was charged: input, output and
	// cache writes and reads.
	Tokens int64
}

// Requests reads the ledger at path, in the order the requests were
// recorded; it fails the test when it cannot.
func Requests(t testing.TB, path string) []Request {
	t.Helper()
	db, err := gateway.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT agent, outcome, model, input_tokens + output_tokens + cache_write_tokens + cache_read_tokens FROM gateway_requests ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []Request
	for rows.Next() {
		var r Request
		if err := rows.Scan(&r.Agent, &r.Outcome, &r.Model, &r.Tokens); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
