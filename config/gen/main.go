// Command gen writes docs/SETTINGS.md from the configuration registry
// (config/settings.go): go generate ./config.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/loci-dev/loci/config"
)

func main() {
	out := flag.String("o", "docs/SETTINGS.md", "file to write")
	flag.Parse()
	text, err := config.SettingsMarkdown(config.Default(config.DocEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
