package plan

import "github.com/apiary-dev/apiary/internal/envelope"

// Template turns a plan task into its envelope template: everything an
// attempt's envelope says but its ids, base, trace, capability and agent
// kind, which the run fills in.
func (t *Task) Template() *envelope.Envelope {
	return &envelope.Envelope{
		Objective: t.Objective,
		Inputs:    envelope.Inputs{Paths: t.Inputs},
		Authority: envelope.Authority{WriteScope: t.WriteScope, Network: envelope.NetworkGateway},
		Budget:    t.Budget,
		Completion: envelope.Completion{Checks: t.Checks, CheckTimeoutS: t.CheckTimeoutS,
			Forbidden: t.Forbidden, Sealed: t.Sealed},
		Deps:   t.Deps,
		Agent:  envelope.AgentRef{Profile: t.Agent},
		LeaseS: t.LeaseS,
		Tags:   t.Tags,
	}
}
