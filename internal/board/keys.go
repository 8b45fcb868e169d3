package board

import "encoding/json"

// TaskKey returns the key of task id's record, for callers that compose a
// task update with other writes in one Txn. The value is the task encoded
// by EncodeTask.
func TaskKey(id string) string { return taskKey(id) }

// ClaimKey returns the key of task's live claim (bound to the claim's
// lease; its CreateRevision is the claim's fencing token).
func ClaimKey(task string) string { return claimKey(task) }

// ClaimPrefix returns the prefix of the claim keys of every task whose id
// begins with idPrefix: watch it to follow those tasks' claims.
func ClaimPrefix(idPrefix string) string { return PrefixClaims + seg(idPrefix) }

// TaskPrefix returns the prefix of the records of every task whose id
// begins with idPrefix.
func TaskPrefix(idPrefix string) string { return PrefixTasks + seg(idPrefix) }

// EncodeTask validates t and returns its record as stored under TaskKey.
func EncodeTask(t Task) ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// DecodeTask reads a task record (as listed under PrefixTasks or seen by a
// watch); Revision is taken from kv.ModRevision.
func DecodeTask(kv KV) (Task, error) { return decodeTask(kv) }

// DecodeClaim reads a claim record; Token is taken from kv.CreateRevision.
func DecodeClaim(kv KV) (Claim, error) { return decodeClaim(kv) }

// IntentKey returns the key of task and worker's declared intent, for a
// caller that withdraws it inside the transaction recording the task's
// outcome (an intent bound to a lease shared with other work outlives the
// task otherwise).
func IntentKey(task, worker string) string { return intentKey(task, worker) }
