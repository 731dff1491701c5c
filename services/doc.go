// Package services holds loci's services on the runtime of package actors,
// shared by REST, MCP and the CLI: the knowledge Graph, Auth, Sources, the
// Miners (the configuration file's miners and source configurations, run
// as mine jobs built as typed submissions), the Triggers with their
// supervisor actor and loops, and the Reporter (status). The job kinds are
// beside them in services/kinds.
package services
