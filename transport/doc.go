// Package transport is loci's HTTP surface: the chi router, its middleware
// (authentication, memory mode, body limits, error rendering) and the REST
// handlers. Handlers only parse, check the mode, call the actors' service
// layer and render; every failure is rendered once, here, as
// {error, code, help} with the status of its code.
package transport
