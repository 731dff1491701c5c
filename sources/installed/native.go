package installed

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/sandbox"
)

// Native is a Caller that runs a Go guest's handler in this process, over
// the contract's wire as the sandbox would (the request and the answer
// encoded as JSON and decoded again): for tests and tools that check a
// source's logic without building its module. It enforces no grant and
// no time limit beyond refusing a call whose context is done.
func Native(h contract.Handler) Caller {
	return func(ctx context.Context, _ sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(contract.Handle(h, bytes.NewReader(in)))
		if err != nil {
			return nil, err
		}
		var ans contract.Answer
		if err := json.Unmarshal(out, &ans); err != nil {
			return nil, err
		}
		return &ans, nil
	}
}
