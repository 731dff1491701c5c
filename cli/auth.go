package cli

import (
	"fmt"
	"net/http"

	"github.com/loci-dev/loci/api"
	"github.com/spf13/cobra"
)

func (a *app) authCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "auth", Short: "Bearer-token authentication: generate or revoke the daemon's token"}
	cmd.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Generate a new token (shown once; the previous generated token stops working at once)",
		Long: "Generate a new token. It is printed once and cannot be recovered: only its SHA-256 digest is kept.\n" +
			"To turn authentication on: run this with authentication off, keep the token, set LOCI_AUTH_ENABLED=true\n" +
			"and LOCI_AUTH_TOKEN for clients, and restart the daemon. With authentication on, this command needs the\n" +
			"current token (LOCI_AUTH_TOKEN or auth.token).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/auth/token", nil, func(t *api.GeneratedToken) {
				a.printf("%s\n", t.Token)
				fmt.Fprintf(a.stderrOrDiscard(), "This token is shown once. Clients send it as Authorization: Bearer <token>; the CLI reads LOCI_AUTH_TOKEN.\n")
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "revoke",
		Short: "Remove the generated token (a configured secret stays); revoking the only credential locks everyone out",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/auth/token", nil, func(*api.TokenRevoked) {
				a.printf("generated token revoked\n")
			})
		},
	})
	return cmd
}
