package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
)

func capCommand() *command {
	return &command{
		name:    "cap",
		summary: "mint, attenuate, inspect and verify capability tokens",
		help: `Capability tokens carry a task's authority: which tools it may call, where it
may write, which hosts it may reach, until when, with what budget and how deep
it may spawn. A token is an HMAC-SHA256 chain over typed caveats rooted in a
secret key: anyone holding a token can add caveats offline to narrow it, and
nobody can remove one without the key. The gateway and the durable server
verify the token on every call.`,
		subs: []*command{capKeygenCommand(), capMintCommand(), capAttenuateCommand(), capInspectCommand(), capVerifyCommand()},
	}
}

func capKeygenCommand() *command {
	return &command{
		name:    "keygen",
		args:    "FILE",
		summary: "write a new random root key to FILE (mode 0600)",
		help: `Writes 32 random bytes to FILE with mode 0600, for use with --key-file.
An existing FILE is never overwritten.`,
		setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "FILE"); err != nil {
					return err
				}
				return writeKeyFile(args[0])
			}
		},
	}
}

func writeKeyFile(name string) error {
	key := make([]byte, capability.MinKeyLen)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; refusing to overwrite a key", name)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readKeyFile(name string) ([]byte, error) {
	if name == "" {
		return nil, usagef("missing --key-file")
	}
	key, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(key) < capability.MinKeyLen {
		return nil, fmt.Errorf("key file %s holds %d bytes, need at least %d (create one with 'apiary cap keygen')", name, len(key), capability.MinKeyLen)
	}
	return key, nil
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

// caveats turns the flags that were set into caveats, in a fixed order.
func (c *caveatFlags) caveats(now time.Time) ([]capability.Caveat, error) {
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var out []capability.Caveat
	if set["tools"] {
		out = append(out, capability.Tools(splitList(c.tools)...))
	}
	if len(c.paths) > 0 {
		out = append(out, capability.PathPrefixes(c.paths...))
	}
	if set["network"] {
		switch hosts := splitList(c.network); {
		case c.network == "none":
			out = append(out, capability.NoNetwork())
		case c.network == "any":
			out = append(out, capability.AnyNetwork())
		case len(hosts) == 0:
			return nil, usagef("--network wants none, any or a list of hosts")
		default:
			out = append(out, capability.Hosts(hosts...))
		}
	}
	if set["expires"] {
		t, err := parseWhen(c.expires, now)
		if err != nil {
			return nil, err
		}
		out = append(out, capability.ExpiresAt(t))
	}
	if set["budget-usd"] || set["budget-tokens"] {
		tokens, usd := int64(-1), int64(-1)
		if set["budget-tokens"] {
			if c.budgetTokens < 0 {
				return nil, usagef("--budget-tokens must be >= 0")
			}
			tokens = c.budgetTokens
		}
		if set["budget-usd"] {
			v, err := parseUSD("budget-usd", c.budgetUSD)
			if err != nil {
				return nil, err
			}
			usd = v
		}
		out = append(out, capability.Budget(tokens, usd))
	}
	if set["depth"] {
		if c.depth < 0 {
			return nil, usagef("--depth must be >= 0")
		}
		out = append(out, capability.MaxDepth(c.depth))
	}
	if set["fence"] {
		out = append(out, capability.Fence(c.fence))
	}
	return out, nil
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

// parseWhen reads a duration from now or an RFC 3339 time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--expires wants a duration (90m) or an RFC 3339 time, got %q", s)
}

// parseUSD reads a non-negative dollar amount into micro-USD.
func parseUSD(flagName, s string) (int64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v > 1e12 {
		return 0, usagef("--%s wants a non-negative amount of dollars, got %q", flagName, s)
	}
	return int64(math.Round(v * 1e6)), nil
}

// decodeArg decodes the TOKEN argument; "-" reads the token from standard
// input, which keeps it out of the process list and shell history.
func decodeArg(e *env, args []string) (*capability.Token, error) {
	if err := exactArgs(args, 1, "TOKEN"); err != nil {
		return nil, err
	}
	text := args[0]
	if text == "-" {
		b, err := io.ReadAll(io.LimitReader(e.stdin, capability.MaxEncodedLen+2))
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	return capability.Decode(strings.TrimSpace(text))
}

func capMintCommand() *command {
	return &command{
		name:    "mint",
		summary: "issue a new token signed with a root key",
		help: `Issues a token for the node --root/--lineage at --epoch, restricted by the
caveat flags, and prints it. Without caveat flags the token is unrestricted.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
				key, err := readKeyFile(*keyFile)
				if err != nil {
					return err
				}
				cs, err := cf.caveats(time.Now())
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
				_, err = fmt.Fprintln(e.stdout, tok)
				return err
			}
		},
	}
}

func capAttenuateCommand() *command {
	return &command{
		name:    "attenuate",
		args:    "TOKEN|-",
		summary: "narrow a token by appending caveats (no key needed)",
		help: `Appends the caveats given by flags to TOKEN and prints the new token. The
result can never do more than TOKEN: every caveat of the chain is checked.
A TOKEN of "-" is read from standard input.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
				_, err = fmt.Fprintln(e.stdout, tok.Attenuate(cs...))
				return err
			}
		},
	}
}

func capInspectCommand() *command {
	return &command{
		name:    "inspect",
		args:    "TOKEN|-",
		summary: "show a token's lineage and caveats (unverified)",
		help: `Prints TOKEN's root, lineage, epoch and caveats without checking its
signature. A TOKEN of "-" is read from standard input.`,
		setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				tok, err := decodeArg(e, args)
				if err != nil {
					return err
				}
				d := capability.Inspect(tok)
				if *asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(d)
				}
				_, err = fmt.Fprint(e.stdout, d)
				return err
			}
		},
	}
}

func capVerifyCommand() *command {
	return &command{
		name:    "verify",
		args:    "TOKEN|-",
		summary: "check a token against a root key and a request",
		help: `Verifies TOKEN's signature with the root key and evaluates every caveat
against the request described by the flags. Prints "valid" and exits 0, or
prints the reason (bad signature, expired, or the caveat that failed) and
exits 1. A TOKEN of "-" is read from standard input.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
				usd, err := parseUSD("spend-usd", *spendUSD)
				if err != nil {
					return err
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
				_, err = fmt.Fprintln(e.stdout, "valid")
				return err
			}
		},
	}
}
