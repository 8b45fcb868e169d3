// Package sim answers "how many agents?" before anyone spends money: closed
// analytical models of scaling (the universal scalability law and its
// least-squares fit), of correlated voting, of fan-out tails (barriers and
// quorums) and of write-set collisions, plus (separately) a discrete-event
// simulator of swarms.
//
// Models are pure functions of their parameters; any randomness comes from
// a *rand.Rand the caller seeds. Invalid parameters return a *ParamError
// matching ErrInvalid.
package sim
