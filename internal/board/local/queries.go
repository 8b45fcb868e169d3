package local

// The board's queries, prepared once when the store opens (see stmtCache).

const (
	qRevision     = `SELECT value FROM meta WHERE name = 'revision'`
	qGetKV        = `SELECT value, create_rev, mod_rev, lease FROM kv WHERE key = ?`
	qMeta         = `SELECT value FROM meta WHERE name = ?`
	qNextDeadline = `SELECT MIN(deadline) FROM leases`
	qDueLeases    = `SELECT COUNT(*) FROM leases WHERE deadline <= ?`
	qTail         = `SELECT rev, type, key, value, create_rev, lease FROM events WHERE rev > ? AND rev <= ? ORDER BY rev, seq`
	qSetRevision  = `UPDATE meta SET value = ? WHERE name = 'revision'`
	qPutKV        = `INSERT INTO kv (key, value, create_rev, mod_rev, lease) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (key) DO UPDATE SET value = excluded.value, mod_rev = excluded.mod_rev, lease = excluded.lease`
	qPutEvent      = `INSERT INTO events (rev, seq, type, key, value, create_rev, lease) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qDeleteKV      = `DELETE FROM kv WHERE key = ?`
	qDeleteEvent   = `INSERT INTO events (rev, seq, type, key, value, create_rev, lease) VALUES (?, ?, ?, ?, NULL, 0, 0)`
	qLeaseDeadline = `SELECT deadline FROM leases WHERE id = ?`
	qLeaseKeys     = `SELECT key FROM kv WHERE lease = ? AND lease != 0 ORDER BY key`
	qDeleteLease   = `DELETE FROM leases WHERE id = ?`
	qDueLeaseIDs   = `SELECT id FROM leases WHERE deadline <= ? ORDER BY deadline, id`
	qNextLeaseID   = `UPDATE meta SET value = value + 1 WHERE name = 'lease' RETURNING value`
	qInsertLease   = `INSERT INTO leases (id, ttl, deadline) VALUES (?, ?, ?)`
	qRenewLease    = `UPDATE leases SET deadline = ? + ttl WHERE id = ? AND deadline > ?`
	qLeaseExists   = `SELECT COUNT(*) FROM leases WHERE id = ?`
	qCompactEvents = `DELETE FROM events WHERE rev < ?`
	qSetCompacted  = `UPDATE meta SET value = ? WHERE name = 'compacted'`
	qSavepoint     = "SAVEPOINT w"
	qRelease       = "RELEASE w"
	qRollbackTo    = "ROLLBACK TO w"
)

// prefixConds are the conditions prefixRange returns.
var prefixConds = []string{"1", "key >= ? AND key < ?", "key >= ?"}

func listQuery(cond string) string {
	return `SELECT key, value, create_rev, mod_rev, lease FROM kv WHERE ` + cond + ` ORDER BY key`
}

func logQuery(cond string) string {
	return `SELECT rev, type, key, value, create_rev, lease FROM events WHERE rev >= ? AND rev <= ? AND ` + cond + ` ORDER BY rev, seq`
}

// queries lists every query the store runs.
func queries() []string {
	qs := []string{qRevision, qGetKV, qMeta, qNextDeadline, qDueLeases, qTail, qSetRevision, qPutKV, qPutEvent,
		qDeleteKV, qDeleteEvent, qLeaseDeadline, qLeaseKeys, qDeleteLease, qDueLeaseIDs, qNextLeaseID, qInsertLease,
		qRenewLease, qLeaseExists, qCompactEvents, qSetCompacted, qSavepoint, qRelease, qRollbackTo}
	for _, c := range prefixConds {
		qs = append(qs, listQuery(c), logQuery(c))
	}
	return qs
}
