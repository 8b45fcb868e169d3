package capability_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
)

func Example() {
	key := []byte("0123456789abcdef0123456789abcdef") // use 32 random bytes
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	epochs := capability.NewEpochs()

	// The runtime mints a token for a run ...
	root, err := capability.Mint(key, capability.ID{Root: "run-1", Epoch: epochs.Current("run-1")},
		capability.Tools("read", "write", "bash"), capability.PathPrefixes("/ws"),
		capability.ExpiresAt(now.Add(time.Hour)), capability.MaxDepth(2))
	if err != nil {
		panic(err)
	}
	// ... and derives a narrower one for a subtask, without the key.
	child, err := root.Derive("task-7", capability.Limits{Tools: []string{"read", "write"}, Paths: []string{"/ws/docs"}})
	if err != nil {
		panic(err)
	}

	write := capability.Request{Tool: "write", Paths: []string{"/ws/docs/a.md"}, Now: now}
	fmt.Println(capability.Verify(key, child, write, epochs))
	write.Paths = []string{"/ws/src/main.go"}
	fmt.Println(capability.Verify(key, child, write, epochs))

	epochs.Revoke("run-1", "task-7")
	write.Paths = []string{"/ws/docs/a.md"}
	err = capability.Verify(key, child, write, epochs)
	fmt.Println(errors.Is(err, capability.ErrRevoked), capability.Verify(key, root, write, epochs))
	// Output:
	// <nil>
	// capability: caveat 6 (paths [/ws/docs]): path "/ws/src/main.go" outside the write scope
	// true <nil>
}
