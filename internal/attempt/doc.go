// Package attempt is the contract between apiary and one agent attempt,
// and the one function that carries an attempt out.
//
// An attempt is one agent CLI run on one task: in its own git worktree at
// a pinned base commit, told its task by reference (an envelope file, the
// base, the paths — never file contents), reaching the models through
// access granted for it alone (TaskRef, ModelAccess) and revoked the
// moment it ends, writing through the MCP write surface confined to its
// write scope (WriteSurface, Grant). Whatever it leaves in the worktree is
// committed by apiary, squashed onto the base with apiary's trailers, and
// checked by the static gates (write scope, sealed paths, forbidden
// patterns).
//
// Run does all of that for every caller: the runtime's workers and
// reconcilers, the planner, swarm workers and review tasks. Callers differ
// only in what they pass in Spec (a branch or a detached worktree, what to
// commit, hooks around the agent) and in what they do with the Result.
package attempt
