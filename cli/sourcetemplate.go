package cli

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/pack"
)

// templateFiles are the source project templates loci source init
// renders: each template is the union of some folders (later ones win),
// every file rendered with text/template when its name ends .tmpl (the
// suffix dropped), copied as it is otherwise; gitignore becomes
// .gitignore. Go files and go.mod carry .tmpl so that the Go tool never
// reads them as part of this module.
//
//go:embed templates
var templateFiles embed.FS

// The templates loci source init makes.
const (
	TemplateGo   = "go"
	TemplateRust = "rust"
	TemplateCLI  = "cli"
)

// templateDirs are each template's folders under templates/.
var templateDirs = map[string][]string{
	TemplateGo:   {"common", "gocommon", "go"},
	TemplateCLI:  {"common", "gocommon", "cli"},
	TemplateRust: {"common", "rust"},
}

// templateNames are the templates, in the order help lists them.
var templateNames = []string{TemplateGo, TemplateRust, TemplateCLI}

// defaultProgram is the program the cli template wraps unless --program
// names another: cat is on every machine and prints a file as it is, so
// the new project passes the conformance cases at once; it is the
// identity converter the author replaces (pdftotext, pandoc...).
const defaultProgram = "cat"

// contractFile is where a Go project holds its copy of the contract.
const contractFile = "contract/contract.go"

// templateData is what the templates are rendered with.
type templateData struct {
	// Name is the source's name (the Go module's and the crate's too).
	Name string
	// Module is the WebAssembly module's file name: Name.wasm.
	Module      string
	Description string
	// Contract is the contract version (contract.Version).
	Contract int
	// GoVersion is the go line of go.mod ("1.26").
	GoVersion string
	// Program is the program the cli template wraps ("" for the others).
	Program string
}

var goVersionRE = regexp.MustCompile(`^go(1\.\d+)`)

// goLine is the language version of go.mod for a toolchain version
// (`go env GOVERSION`, "go1.26.8"): its major and minor ("1.26"); 1.21,
// the first with wasip1, when it reads otherwise (a development build).
func goLine(toolchain string) string {
	if m := goVersionRE.FindStringSubmatch(strings.TrimSpace(toolchain)); m != nil {
		return m[1]
	}
	return "1.21"
}

// renderTemplate is the files of a new project of template kind, by
// slash-separated path. The manifest rendered is checked as loci reads
// it: a name that is not a source name is the manifest's own error.
func renderTemplate(kind string, d templateData) (map[string][]byte, error) {
	dirs, ok := templateDirs[kind]
	if !ok {
		return nil, fault.Newf(fault.InputInvalid, "use one of: "+strings.Join(templateNames, ", "), "--template %q is not a template", kind)
	}
	d.Module = d.Name + ".wasm"
	d.Contract = contract.Version
	if d.Description == "" {
		d.Description = "Files the text files of a folder."
		if kind == TemplateCLI {
			d.Description = fmt.Sprintf("Files what %s prints for each file of a folder.", d.Program)
		}
	}
	files := map[string][]byte{}
	for _, dir := range dirs {
		root := "templates/" + dir
		err := fs.WalkDir(templateFiles, root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel := strings.TrimPrefix(p, root+"/")
			b, err := templateFiles.ReadFile(p)
			if err != nil {
				return err
			}
			if name, ok := strings.CutSuffix(rel, ".tmpl"); ok {
				t, err := template.New(rel).Option("missingkey=error").Parse(string(b))
				if err != nil {
					return err
				}
				var out bytes.Buffer
				if err := t.Execute(&out, d); err != nil {
					return err
				}
				rel, b = name, out.Bytes()
			}
			if path.Base(rel) == "gitignore" {
				rel = path.Join(path.Dir(rel), ".gitignore")
			}
			files[rel] = b
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("the %s template: %w", kind, err)
		}
	}
	if kind == TemplateGo || kind == TemplateCLI {
		files[contractFile] = []byte(contract.Source)
	}
	if _, err := pack.ParseManifest(files[pack.ManifestFile]); err != nil {
		return nil, err
	}
	return files, nil
}

// sortedPaths are the paths of files in order.
func sortedPaths(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
