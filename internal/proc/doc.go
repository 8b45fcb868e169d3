// Package proc contains the processes apiary starts on behalf of an
// attempt or a check, so that none of them outlives its owner.
//
// Every command a Tracker starts leads a scope of its own: a cgroup v2
// directory where the machine lets apiary make one (the leader is cloned
// straight into it, so not even its first fork can escape), otherwise a
// process group. Either way every process of the scope carries the
// scope's marker in its environment (APIARY_SCOPE=OWNER/NONCE/NAME), which
// fork, exec and setsid all keep, and the scope is described by a Scope
// value (its cgroup, its group id, its leader's start time) that the
// caller records before it waits.
//
// That gives two ways to find a scope's processes. While apiary runs,
// Process.Close ends a scope as soon as its leader has exited: whatever is
// left (a background child still holding the leader's stdout, an MCP
// server, a daemon that called setsid) gets SIGTERM and, after the grace
// period, SIGKILL. After apiary itself died, Reap, ReapOwner and
// RemoveCgroup find what a recorded scope or a whole owner left behind —
// by its cgroup, or by its marker, never by a pid alone, so a reused pid
// is never touched.
//
// The marker is preferred over a child subreaper (PR_SET_CHILD_SUBREAPER):
// an adopted process is linked to apiary only while apiary lives, and a Go
// program cannot reap the zombies it adopts without racing os/exec's own
// waits, while a marker survives apiary's death and is read from /proc.
package proc
