package supervise

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Strategy is how a group answers the failure of one of its members.
type Strategy string

// Strategies.
const (
	// OneForOne restarts only the member that failed.
	OneForOne Strategy = "one_for_one"
	// OneForAll restarts every member that is not done: the failed one and
	// the others still pending, running or waiting for integration (a
	// member already finished stays finished: its work is integrated and
	// cannot be taken back).
	OneForAll Strategy = "one_for_all"
)

// Defaults of a GroupSpec's restart intensity.
const (
	DefaultMaxRestarts = 3
	DefaultWithin      = 60 * time.Second
)

// GroupSpec describes a supervision group.
type GroupSpec struct {
	Name     string
	Strategy Strategy
	// MaxRestarts restarts are allowed within Within; the next failure
	// escalates. Zero values take DefaultMaxRestarts and DefaultWithin; a
	// negative MaxRestarts allows none.
	MaxRestarts int
	Within      time.Duration
	Members     []string
}

// Intensity is a sliding-window restart counter: at most Max restarts in
// any window of length Within. The zero value allows none. Not safe for
// concurrent use (a Supervisor guards its own).
type Intensity struct {
	Max    int
	Within time.Duration
	times  []time.Time // restarts granted, oldest first
}

// Allow records a restart at now and returns true if fewer than Max
// restarts happened in (now-Within, now]; otherwise it records nothing and
// returns false.
func (in *Intensity) Allow(now time.Time) bool {
	cut := 0
	for cut < len(in.times) && !in.times[cut].After(now.Add(-in.Within)) {
		cut++
	}
	in.times = in.times[cut:]
	if len(in.times) >= in.Max {
		return false
	}
	in.times = append(in.times, now)
	return true
}

// Decision is a Supervisor's answer to a failure.
type Decision struct {
	Group string
	// Restart lists the members to start again (the failed one first, then
	// the others in name order); empty when escalating.
	Restart []string
	// Escalate is set when the restart intensity is exhausted (or the member
	// belongs to no group): the failure goes to the group's parent, and the
	// group's members that are not done should be stopped.
	Escalate bool
	// Stop lists, when escalating, the other members that are not done.
	Stop   []string
	Reason string
}

// Supervisor applies the groups' strategies. Safe for concurrent use.
type Supervisor struct {
	mu       sync.Mutex
	groups   map[string]*group
	byMember map[string]*group
}

type group struct {
	spec GroupSpec
	in   Intensity
}

// NewSupervisor checks the specs: unique group names, known strategies, a
// member in at most one group.
func NewSupervisor(specs []GroupSpec) (*Supervisor, error) {
	s := &Supervisor{groups: map[string]*group{}, byMember: map[string]*group{}}
	for _, sp := range specs {
		if sp.Name == "" || s.groups[sp.Name] != nil {
			return nil, fmt.Errorf("%w: group name %q empty or repeated", ErrInvalid, sp.Name)
		}
		if sp.Strategy != OneForOne && sp.Strategy != OneForAll {
			return nil, fmt.Errorf("%w: group %s: strategy %q", ErrInvalid, sp.Name, sp.Strategy)
		}
		g := &group{spec: sp, in: Intensity{Max: sp.MaxRestarts, Within: sp.Within}}
		if sp.MaxRestarts == 0 {
			g.in.Max = DefaultMaxRestarts
		}
		if sp.Within <= 0 {
			g.in.Within = DefaultWithin
		}
		for _, m := range sp.Members {
			if s.byMember[m] != nil {
				return nil, fmt.Errorf("%w: %s is in groups %s and %s", ErrInvalid, m, s.byMember[m].spec.Name, sp.Name)
			}
			s.byMember[m] = g
		}
		s.groups[sp.Name] = g
	}
	return s, nil
}

// GroupOf returns the name of member's group, "" if none.
func (s *Supervisor) GroupOf(member string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.byMember[member]; g != nil {
		return g.spec.Name
	}
	return ""
}

// Failed decides what to do about member's failure at now. active reports
// whether a member is not done (pending, queued or running); it is asked
// about the group's other members only. A member of no group escalates at
// once: without a supervisor its failure is its parent's to handle.
func (s *Supervisor) Failed(member string, now time.Time, active func(string) bool) Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.byMember[member]
	if g == nil {
		return Decision{Escalate: true, Reason: "not supervised"}
	}
	d := Decision{Group: g.spec.Name}
	var others []string
	for _, m := range g.spec.Members {
		if m != member && active(m) {
			others = append(others, m)
		}
	}
	sort.Strings(others)
	if !g.in.Allow(now) {
		d.Escalate, d.Stop = true, others
		d.Reason = fmt.Sprintf("group %s: more than %d restarts within %s", g.spec.Name, g.in.Max, g.in.Within)
		return d
	}
	d.Restart = []string{member}
	if g.spec.Strategy == OneForAll {
		d.Restart = append(d.Restart, others...)
	}
	d.Reason = fmt.Sprintf("group %s (%s): restart %d of %d within %s", g.spec.Name, g.spec.Strategy, len(g.in.times), g.in.Max, g.in.Within)
	return d
}
