// Package review is apiary's gatekeeper for changes: `apiary review`. A
// change (base..head, or a patch applied to base) is examined by analysers
// chosen by what it touches, each a task with an envelope on a read-only
// checkout of the change; their findings go to the board, where analysers
// that subscribe to them react in one bounded round; a rule — not a vote —
// decides merge or block; optionally, adversarial reviewers may still
// block (never merge) a change the rules would merge; and a merge can be
// applied through the runtime (package runs), whose gates and integrator
// it passes like any task's work. Consensus may propose; only an invariant
// gate may commit.
//
// A review cannot be gamed by the change it judges: its rules come from the
// operator or the base commit, never the change; its agent tasks work in
// checkouts and private directories of their own, none seeing another's
// work before all have answered; its reports are sealed with the
// repository's review key, and resolve refuses one that does not verify.
//
// decisions: D-1, D-5
package review
