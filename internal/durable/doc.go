// Package durable is the agents' write surface: transactional file writes,
// resumable chunked writes, a content-addressed scratchpad, task handoffs,
// checkpoints, a pre-flight risk score, syntax validation, a write journal
// and its analytics, and the read/edit tools an agent needs besides, all
// confined to a set of root directories. It is a superset of Resilient
// Write (github.com/jayluxferro/resilient-write v0.2.0): the same operations,
// arguments, result fields and error envelope, with its defects fixed.
// Package mcpserver binds it to MCP; durable itself knows nothing of MCP.
//
// # Errors
//
// Every failure a model should read is an *Error, which serialises to
// Resilient Write's envelope (exactly ok, schema_version, error,
// reason_hint, detected_patterns, suggested_action, retry_budget, context;
// see spec/errors.schema.json there). errors.Is(err, ErrStalePrecondition)
// and the other kind sentinels work. Context always carries "retriable"
// (true for the network and size_limit hints, as Resilient Write's
// is_retriable, and for suggested_action retry_later). Input errors are
// policy_violation/encoding with Resilient Write's reason strings. A
// classifier refusal (blocked/content_filter) carries a retry budget that
// really counts down: keyed on (tool, path, content SHA-256), persisted in
// <state>/attempts.json, it reports the policy's budget (default 3) on the
// first refusal, one less on each identical retry down to 0, and then
// refuses with quota_exceeded (original reason_hint, action ask_user,
// context.attempts) without classifying again; a success on that path or
// different content starts afresh.
//
// # Durability
//
// A write (writeAtomic) opens the parent directory once as its own os.Root
// and does everything relative to it: temp file ".<name>.tmp.<pid>.<hex>"
// created O_EXCL with the existing file's mode (and owner when permitted),
// write, fsync, read-back hash, the journal row recorded with the write's
// lock (below), then — the commit point, the last place a cancelled context
// takes effect — rename over the target, or for create
// renameat2(RENAME_NOREPLACE) (renameatx_np RENAME_EXCL on darwin,
// link+unlink elsewhere) so a file created meanwhile is never clobbered,
// then fsync of the directory (and of the parent of every directory created
// on the way). Only then is the journal row appended and fsynced, and only
// then does the call return. Any fsync or close error before the commit
// point fails the whole write; nothing retries an fsync. A journal append
// that fails after it does not fail a write that landed: the result says
// journal_degraded (with a journal_append_failed warning) and the row stays
// recorded until a later holder of the lock, or the next Open, journals it,
// marked "recovered": true.
//
// Open sweeps temp files left by dead processes (or older than SweepAge),
// cuts a torn (unterminated, unparsable) last journal line, journals every
// recorded write that landed but lost its writer before its row
// (StartupReport.Recovered; one that did not land is forgotten), and
// compares the latest journal row of recently written paths with the disk
// (StartupReport.Drifted: reported, never "repaired"). A torn line found
// later is cut before the next append, so it can never poison the journal.
// Open creates nothing: a workspace without state stays without.
//
// # Many servers, one root
//
// Every agent session starts its own server, so any number of processes
// (stdio and HTTP, and Workspaces within one process) may serve one root at
// once, with one truth: guarded writes (expected_prev_sha256),
// create-if-absent, appends, chunk sessions, the scratch index, checkpoints,
// retry budgets and the journal are serialized across all of them by
// flock(2) on lock files under <state>/locks/ (decision: D-3). A key — a
// user path (root and canonical path), a chunk session, a checkpoint name —
// maps to one of 256 lock files of its class by the first byte of its
// SHA-256; the scratch index, the retry budgets and the journal have one
// file each. A holder takes its process's own mutex for the file, then the
// flock, then checks that the path still names the file it locked. Classes
// are taken in one order (chunk, path, checkpoint, scratch, attempts,
// journal; two paths, for rw.move, in name order), so no two holders wait
// on each other. flock belongs to the open file description, so the kernel
// releases it when its holder dies, SIGKILL included: no lock outlives its
// holder, and no lock file is ever deleted (deleting one would let two
// holders lock different files of one name). A writer waiting for a lock
// gives up when its context ends. Before its commit point a journaled write
// records its journal row in its lock file (synced); after appending the
// row it clears the record; whoever takes a lock and finds a record settles
// it, as Open does for every lock nobody holds.
//
// # Confinement
//
// Every path goes through resolve and then through os.Root. Refused, as
// policy_violation/permission: empty paths, NUL bytes, absolute paths,
// lexical escapes (".." compared by component, so "../ws_evil" is refused
// for root "ws"), symlinks — relative or absolute, to files or directories —
// leading out, dangling symlinks, writes to or reads from files with more
// than one hard link, and the state directory. "~" is never expanded. An
// inside symlink resolves to its target: writing "alias" (alias -> real)
// replaces "real" and leaves the link. Because the I/O itself is done
// through os.Root on the pinned parent directory, a directory swapped for
// an escaping symlink after resolution is still refused (TestSymlinkSwapRace).
//
// # Roots and state
//
// Config.Roots[0] is the workspace: plain relative paths name files there,
// and all server state lives in its state directory. Further roots are
// addressed as "@<base name>/<path>" (base names must be distinct), are
// journaled under that name and never hold state. With a single root a
// leading "@" is an ordinary file-name character.
//
// The state directory defaults to DefaultStateDir (.apiary/durable) and is
// created on demand:
//
//	journal.jsonl               one row per successful write (sorted keys:
//	                            bytes, caller, journal_id, mode, path, sha256, ts)
//	attempts.json               retry budgets
//	policy.yaml                 classifier overrides (unless Config.PolicyFile)
//	chunks/<session>/part-NNN.txt, manifest.json
//	scratch/<sha256>.bin, scratch/index.jsonl
//	checkpoints/<name>.json
//	handoffs/<YYYYmmddTHHMMSSZ>_<task_id>.md
//	locks/<class>-<hex>.lock, scratch.lock, attempts.lock, journal.lock
//
// It is refused as a user path (an agent cannot rewrite the policy or forge
// journal rows — in Resilient Write it can). CompatStateDir
// (.resilient_write) reproduces Resilient Write's paths exactly (chunk_path,
// scratch_path, checkpoint_path, the journal location); analytics recognises
// chunk and checkpoint rows under either directory.
//
// # Differences from Resilient Write
//
// Beyond the fixes above: chunk_append under concurrency, in one server or
// many, leaves one part per call; chunk_reset of a session that never
// existed says existed:false even on a workspace with no state yet; a checkpoint above 1 MiB is written in one transaction (so no
// multibyte character is ever split) and still reports chunked:true; ENOSPC
// suggests split, not abort; a bad analytics "since" is an envelope, not a
// crash; handoff archive names use a sanitised task_id; rw.validate also
// checks TOML, Go (go/parser), Markdown fences, and Python through Config.Python
// (Python3 runs python3; without it the result says unsupported), and
// places a YAML error where libyaml's problem mark (and so PyYAML) puts it,
// line and column; rw.list and rw.search globs are doublestar's (linear
// time, "{a,b}" alternation); the
// journal modes also include "edit" and "move" (rw.move rows carry "from").
// Results are JSON objects with sorted keys like Resilient Write's;
// envelopes and journal rows are additionally ASCII-escaped, so they are
// byte-identical to its output for the same fields.
//
// # Authority
//
// Config.Authority is consulted with (tool, "") before every call and with
// (tool, path) for every user path a tool writes. WriteScope (a list of path
// prefixes, from --write-scope) is the implementation until capability
// tokens arrive; a token verifier will implement the same interface.
//
// The environment (RW_WORKSPACE, RW_POLICY_FILE, RW_SCRATCH_DISABLE_GET) is
// read by package cli and passed in Config; this package never reads it.
//
// # Platforms
//
// The guarantees above rest on flock(2) and on O_NOFOLLOW opens checked
// with fstat, implemented for unix (linux, darwin and the BSDs). Elsewhere
// Open refuses with ErrPlatform rather than serve a root it cannot keep
// safe.
package durable
