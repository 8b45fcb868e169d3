package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// VirtualKeyPrefix starts every key the gateway issues, so a presented key is
// looked up only when it can be ours.
const VirtualKeyPrefix = "apiary-vk-"

// VirtualKey is a per-agent key issued by the gateway. Agents present it in
// place of the real upstream key, which they never see; the gateway maps it to
// the agent, its budgets and priority, and substitutes the real key upstream.
type VirtualKey struct {
	ID           string    `json:"id"`
	Agent        string    `json:"agent"`
	BudgetMicro  int64     `json:"budget_usd_micro"` // 0 = no USD budget
	BudgetTokens int64     `json:"budget_tokens"`    // 0 = no token budget
	Priority     int       `json:"priority"`
	CreatedAt    time.Time `json:"created_at"`
	Revoked      bool      `json:"revoked"`
}

// Errors about virtual keys.
var (
	ErrUnknownKey = errors.New("gateway: unknown or revoked virtual key")
	ErrBadAgent   = errors.New("gateway: agent name must be 1-128 printable characters without spaces")
)

func hashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateKey issues a new virtual key for agent, stores its hash in db and
// returns the secret (shown once) and its record.
func CreateKey(ctx context.Context, db *sql.DB, agent string, budgetMicro, budgetTokens int64, priority int, now time.Time) (string, VirtualKey, error) {
	if agent == "" || len(agent) > 128 || strings.ContainsFunc(agent, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", VirtualKey{}, fmt.Errorf("%w: %q", ErrBadAgent, agent)
	}
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", VirtualKey{}, err
	}
	secret := VirtualKeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw[:]))
	h := hashKey(secret)
	k := VirtualKey{ID: "vk_" + h[:12], Agent: agent, BudgetMicro: budgetMicro, BudgetTokens: budgetTokens, Priority: priority, CreatedAt: now.UTC()}
	_, err := db.ExecContext(ctx, `INSERT INTO gateway_keys (id, key_hash, agent, budget_usd_micro, budget_tokens, priority, created_at) VALUES (?,?,?,?,?,?,?)`,
		k.ID, h, k.Agent, k.BudgetMicro, k.BudgetTokens, k.Priority, k.CreatedAt.Format(time.RFC3339Nano))
	if err != nil {
		return "", VirtualKey{}, fmt.Errorf("gateway: store key: %w", err)
	}
	return secret, k, nil
}

// RevokeKey marks a key revoked; requests presenting it are refused.
func RevokeKey(ctx context.Context, db *sql.DB, id string) error {
	res, err := db.ExecContext(ctx, `UPDATE gateway_keys SET revoked = 1 WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("gateway: revoke key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s", ErrUnknownKey, id)
	}
	return nil
}

// ListKeys returns every issued key, newest first.
func ListKeys(ctx context.Context, db *sql.DB) ([]VirtualKey, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, agent, budget_usd_micro, budget_tokens, priority, created_at, revoked FROM gateway_keys ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("gateway: list keys: %w", err)
	}
	defer rows.Close()
	var out []VirtualKey
	for rows.Next() {
		var k VirtualKey
		var created string
		var revoked int
		if err := rows.Scan(&k.ID, &k.Agent, &k.BudgetMicro, &k.BudgetTokens, &k.Priority, &created, &revoked); err != nil {
			return nil, fmt.Errorf("gateway: list keys: %w", err)
		}
		k.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		k.Revoked = revoked != 0
		out = append(out, k)
	}
	return out, rows.Err()
}

// keyring resolves presented virtual keys, caching the table in memory and
// re-reading it on a miss (a key created by `apiary gateway key create` while
// the gateway runs is found on its first use).
type keyring struct {
	db *sql.DB // nil: no virtual keys

	mu     sync.RWMutex
	byHash map[string]VirtualKey
}

func (kr *keyring) lookup(ctx context.Context, secret string) (VirtualKey, error) {
	h := hashKey(secret)
	kr.mu.RLock()
	k, ok := kr.byHash[h]
	kr.mu.RUnlock()
	if !ok && kr.db != nil {
		if err := kr.reload(ctx); err != nil {
			return VirtualKey{}, err
		}
		kr.mu.RLock()
		k, ok = kr.byHash[h]
		kr.mu.RUnlock()
	}
	if !ok || k.Revoked {
		return VirtualKey{}, ErrUnknownKey
	}
	return k, nil
}

func (kr *keyring) reload(ctx context.Context) error {
	rows, err := kr.db.QueryContext(ctx, `SELECT key_hash, id, agent, budget_usd_micro, budget_tokens, priority, created_at, revoked FROM gateway_keys`)
	if err != nil {
		return fmt.Errorf("gateway: load keys: %w", err)
	}
	defer rows.Close()
	m := map[string]VirtualKey{}
	for rows.Next() {
		var h, created string
		var k VirtualKey
		var revoked int
		if err := rows.Scan(&h, &k.ID, &k.Agent, &k.BudgetMicro, &k.BudgetTokens, &k.Priority, &created, &revoked); err != nil {
			return fmt.Errorf("gateway: load keys: %w", err)
		}
		k.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		k.Revoked = revoked != 0
		m[h] = k
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("gateway: load keys: %w", err)
	}
	kr.mu.Lock()
	kr.byHash = m
	kr.mu.Unlock()
	return nil
}

// revoked marks key id revoked in the cache, so that it is refused at once
// even before the table is read again.
func (kr *keyring) revoked(id string) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for h, k := range kr.byHash {
		if k.ID == id {
			k.Revoked = true
			kr.byHash[h] = k
		}
	}
}
