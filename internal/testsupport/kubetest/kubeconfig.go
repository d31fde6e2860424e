package kubetest

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file for cfg (the control plane's
// admin credentials, as Start and StartMain return them) to path, so that
// processes a test starts — `flightfeed manager` — reach the same API
// server through KUBECONFIG or --kubeconfig. The file holds a private key:
// it is written with mode 0600. cfg.Impersonate's user and groups are kept
// (the kubeconfig's "as"), so a test can act as a person with fewer rights.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	server := cfg.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	caData, err := dataOrFile(cfg.CAData, cfg.CAFile)
	if err != nil {
		return err
	}
	certData, err := dataOrFile(cfg.CertData, cfg.CertFile)
	if err != nil {
		return err
	}
	keyData, err := dataOrFile(cfg.KeyData, cfg.KeyFile)
	if err != nil {
		return err
	}
	const name = "envtest"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server + cfg.APIPath,
		CertificateAuthorityData: caData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certData,
		ClientKeyData:         keyData,
		Token:                 cfg.BearerToken,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("kubetest: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// dataOrFile returns data, or the content of file when data is empty.
func dataOrFile(data []byte, file string) ([]byte, error) {
	if len(data) > 0 || file == "" {
		return data, nil
	}
	b, err := os.ReadFile(file) //nolint:gosec // a path from the control plane's own rest.Config
	if err != nil {
		return nil, fmt.Errorf("kubetest: read %s: %w", file, err)
	}
	return b, nil
}
