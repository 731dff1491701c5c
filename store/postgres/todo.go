package postgres

import "errors"

// errTODO marks a method not written yet.
var errTODO = errors.New("postgres: not implemented yet")
