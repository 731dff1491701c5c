module github.com/dolthub/go-icu-regex

go 1.23

require (
	github.com/stretchr/testify v1.8.2
	github.com/tetratelabs/wazero v1.8.2
	gopkg.in/src-d/go-errors.v1 v1.0.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
