// Package services holds loci's services on the runtime of package actors,
// shared by REST, MCP and the CLI: the Palace (wings, rooms and drawers,
// the diary, counts, and an agent's WakeUp), the knowledge Graph, Auth,
// Sources, the source Packages (installed with the user's consent, loaded
// into the sources registry against the digests recorded, run in the
// sandbox), the Miners (the configuration file's miners and source
// configurations, run as mine jobs built as typed submissions), the
// Triggers with their supervisor actor and loops, and the Reporter
// (status). Every write goes through the runtime's writer. The job kinds
// are beside them in services/kinds.
package services
