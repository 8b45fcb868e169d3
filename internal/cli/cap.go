package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
)

func capCommand() *command {
	return &command{
		Name:    "cap",
		Summary: "mint, attenuate, inspect and verify capability tokens",
		Help: `Capability tokens carry a task's authority: which tools it may call, where it
may write, which hosts it may reach, until when, with what budget and how deep
it may spawn. A token is an HMAC-SHA256 chain over typed caveats rooted in a
secret key: anyone holding a token can add caveats offline to narrow it, and
nobody can remove one without the key. The gateway and the durable server
verify the token on every call.`,
		Examples: []string{
			"apiary cap keygen cap.key",
			"apiary cap mint --key-file cap.key --tools read,write --expires 1h",
		},
		Subs: []*command{capKeygenCommand(), capMintCommand(), capAttenuateCommand(), capInspectCommand(), capVerifyCommand()},
	}
}

func capKeygenCommand() *command {
	return &command{
		Name:    "keygen",
		Args:    "FILE",
		Summary: "write a new random root key to FILE (mode 0600)",
		Help: `Writes 32 random bytes to FILE with mode 0600, for use with --key-file.
An existing FILE is never overwritten.`,
		Examples: []string{
			"apiary cap keygen cap.key",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "FILE"); err != nil {
					return err
				}
				return capability.WriteKeyFile(args[0], rand.Reader)
			}
		},
	}
}

func readKeyFile(name string) ([]byte, error) {
	if name == "" {
		return nil, usagef("missing --key-file")
	}
	return capability.ReadKeyFile(name)
}

// caveatFlags are the flags shared by mint and attenuate.
type caveatFlags struct {
	fs           *flag.FlagSet
	tools        string
	paths        stringList
	network      string
	expires      string
	budgetUSD    string
	budgetTokens int64
	depth        int
	fence        uint64
}

func (c *caveatFlags) register(fs *flag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.tools, "tools", "", "allow only these `tools`, comma-separated (empty: no tools)")
	fs.Var(&c.paths, "path", "allow writes only under this path `prefix` (repeatable)")
	fs.StringVar(&c.network, "network", "", "network access: none, any, or comma-separated `hosts`")
	fs.StringVar(&c.expires, "expires", "", "expire after a `duration` (1h) or at an RFC 3339 time")
	fs.StringVar(&c.budgetUSD, "budget-usd", "", "limit spend to this many US `dollars`")
	fs.Int64Var(&c.budgetTokens, "budget-tokens", 0, "limit spend to `N` model tokens")
	fs.IntVar(&c.depth, "depth", 0, "limit spawning to `N` levels below the holder")
	fs.Uint64Var(&c.fence, "fence", 0, "bind to the lease with this fencing `token`")
}

// caveats turns the flags that were set into caveats, in a fixed order
// (see capability.Spec).
func (c *caveatFlags) caveats(now time.Time) ([]capability.Caveat, error) {
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cs, err := capability.Spec{Tools: c.tools, Paths: c.paths, Network: c.network, Expires: c.expires,
		BudgetUSD: c.budgetUSD, BudgetTokens: c.budgetTokens, Depth: c.depth, Fence: c.fence,
		Set: capability.SpecSet{Tools: set["tools"], Network: set["network"], Expires: set["expires"],
			BudgetUSD: set["budget-usd"], BudgetTokens: set["budget-tokens"], Depth: set["depth"], Fence: set["fence"]},
	}.Caveats(now)
	return cs, capUsage(err)
}

// capUsage makes a capability.SpecError a usage error naming its flag.
func capUsage(err error) error {
	var se *capability.SpecError
	if errors.As(err, &se) {
		return usagef("--%v", se)
	}
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// decodeArg decodes the TOKEN argument; "-" reads the token from standard
// input, which keeps it out of the process list and shell history.
func decodeArg(e *env, args []string) (*capability.Token, error) {
	if err := exactArgs(args, 1, "TOKEN"); err != nil {
		return nil, err
	}
	if args[0] == "-" {
		return capability.ReadToken(e.Stdin)
	}
	return capability.Decode(strings.TrimSpace(args[0]))
}

func capMintCommand() *command {
	return &command{
		Name:    "mint",
		Summary: "issue a new token signed with a root key",
		Help: `Issues a token for the node --root/--lineage at --epoch, restricted by the
caveat flags, and prints it. Without caveat flags the token is unrestricted.`,
		Examples: []string{
			"apiary cap mint --key-file cap.key --tools read,write --path /ws --expires 1h",
			"apiary cap mint --key-file cap.key --budget-usd 2.5 --depth 1 --network none",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			var cf caveatFlags
			cf.register(fs)
			keyFile := fs.String("key-file", "", "read the root key from `file` (required)")
			root := fs.String("root", "apiary", "`name` of the root of the token's lineage")
			lineage := fs.String("lineage", "", "lineage `path` below the root, slash-separated")
			epoch := fs.Uint64("epoch", 0, "issue epoch `N` (tokens older than a node's revocation are rejected)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				cs, err := cf.caveats(time.Now())
				if err != nil {
					return err
				}
				key, err := readKeyFile(*keyFile)
				if err != nil {
					return err
				}
				id := capability.ID{Root: *root, Epoch: *epoch}
				if *lineage != "" {
					id.Path = strings.Split(strings.Trim(*lineage, "/"), "/")
				}
				tok, err := capability.Mint(key, id, cs...)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.Stdout, tok)
				return err
			}
		},
	}
}

func capAttenuateCommand() *command {
	return &command{
		Name:    "attenuate",
		Args:    "TOKEN|-",
		Summary: "narrow a token by appending caveats (no key needed)",
		Help: `Appends the caveats given by flags to TOKEN and prints the new token. The
result can never do more than TOKEN: every caveat of the chain is checked.
A TOKEN of "-" is read from standard input.`,
		Examples: []string{
			"apiary cap mint --key-file cap.key | apiary cap attenuate --tools read --child reviewer -",
			"apiary cap attenuate --expires 30m --budget-usd 1 \"$TOKEN\"",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			var cf caveatFlags
			cf.register(fs)
			child := fs.String("child", "", "append a lineage `segment`: revoking it revokes the new token")
			return func(ctx context.Context, e *env, args []string) error {
				tok, err := decodeArg(e, args)
				if err != nil {
					return err
				}
				cs, err := cf.caveats(time.Now())
				if err != nil {
					return err
				}
				if *child != "" {
					cs = append([]capability.Caveat{capability.Lineage(*child)}, cs...)
				}
				if len(cs) == 0 {
					return usagef("no caveat flags given")
				}
				_, err = fmt.Fprintln(e.Stdout, tok.Attenuate(cs...))
				return err
			}
		},
	}
}

func capInspectCommand() *command {
	return &command{
		Name:    "inspect",
		Args:    "TOKEN|-",
		Summary: "show a token's lineage and caveats (unverified)",
		Help: `Prints TOKEN's root, lineage, epoch and caveats without checking its
signature. A TOKEN of "-" is read from standard input.`,
		Examples: []string{
			"apiary cap inspect \"$TOKEN\"",
			"apiary cap mint --key-file cap.key | apiary cap inspect --json -",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				tok, err := decodeArg(e, args)
				if err != nil {
					return err
				}
				d := capability.Inspect(tok)
				if *asJSON {
					return writeJSON(e.Stdout, d)
				}
				_, err = fmt.Fprint(e.Stdout, d)
				return err
			}
		},
	}
}

func capVerifyCommand() *command {
	return &command{
		Name:    "verify",
		Args:    "TOKEN|-",
		Summary: "check a token against a root key and a request",
		Help: `Verifies TOKEN's signature with the root key and evaluates every caveat
against the request described by the flags. Prints "valid" and exits 0, or
prints the reason (bad signature, expired, or the caveat that failed) and
exits 1. A TOKEN of "-" is read from standard input.`,
		Examples: []string{
			"apiary cap verify --key-file cap.key --tool read --path /ws/src/a.go \"$TOKEN\"",
			"apiary cap verify --key-file cap.key --spend-usd 3 \"$TOKEN\"",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			keyFile := fs.String("key-file", "", "read the root key from `file` (required)")
			tool := fs.String("tool", "", "the request calls the tool `name`")
			var paths stringList
			fs.Var(&paths, "path", "the request writes this `path` (repeatable)")
			host := fs.String("host", "", "the request contacts `host`")
			spendUSD := fs.String("spend-usd", "0", "the holder's spend so far in US `dollars`")
			spendTokens := fs.Int64("spend-tokens", 0, "the holder's spend so far: `N` model tokens")
			depth := fs.Int("depth", 0, "the request spawns `N` levels below the holder")
			at := fs.String("at", "", "verify at this RFC 3339 `time` instead of now")
			return func(ctx context.Context, e *env, args []string) error {
				key, err := readKeyFile(*keyFile)
				if err != nil {
					return err
				}
				tok, err := decodeArg(e, args)
				if err != nil {
					return err
				}
				usd, err := capability.ParseUSD("spend-usd", *spendUSD)
				if err != nil {
					return capUsage(err)
				}
				now := time.Now()
				if *at != "" {
					if now, err = time.Parse(time.RFC3339, *at); err != nil {
						return usagef("--at wants an RFC 3339 time, got %q", *at)
					}
				}
				req := capability.Request{Tool: *tool, Paths: paths, Host: *host, Now: now,
					Spend: capability.Spend{Tokens: *spendTokens, MicroUSD: usd}, Depth: *depth}
				if err := capability.Verify(key, tok, req, nil); err != nil {
					return fmt.Errorf("invalid: %w", err)
				}
				_, err = fmt.Fprintln(e.Stdout, "valid")
				return err
			}
		},
	}
}
