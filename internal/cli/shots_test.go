package cli

import "flag"

// The screenshot flags of the browser and tmux tests; here, not beside the
// browser tests, because those build on unix only and the flags exist
// everywhere.
var (
	docImage = flag.Bool("dash.docimg", false, "also write the README's dashboard screenshots and top capture to docs/img")
	shotDir  = flag.String("dash.shots", "", "also copy the browser test's screenshots to `DIR`")
)
