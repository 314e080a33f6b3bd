package testrouter

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// jettyJars are the jars of Debian's libjetty9-java (Jetty 9.4) and the
// servlet API it builds on, which the Jetty app compiles and runs against.
var jettyJars = []string{"/usr/share/java/jetty9-server.jar", "/usr/share/java/jetty9-http.jar",
	"/usr/share/java/jetty9-util.jar", "/usr/share/java/jetty9-io.jar", "/usr/share/java/servlet-api.jar"}

// jettyCommand readies the Jetty app (fails t when Jetty or a JDK is
// missing) and returns the command that runs it on a port.
func jettyCommand(t testing.TB, src string) func(port int) *exec.Cmd {
	t.Helper()
	java, err := exec.LookPath("java")
	for _, jar := range jettyJars {
		if err == nil {
			_, err = os.Stat(jar)
		}
	}
	if err != nil {
		testneed.Missing(t, "testrouter: %v; the Jetty kind needs Debian's Jetty 9: apt-get install libjetty9-java", err)
	}
	classes, err := jettyClasses()
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	classpath := strings.Join(append([]string{filepath.Dir(classes[0])}, jettyJars...), string(os.PathListSeparator))
	return func(port int) *exec.Cmd {
		cmd := exec.Command(java, slices.Concat(tomcatJVMFlags, []string{"-classpath", classpath, "Router", strconv.Itoa(port)})...)
		cmd.Env = withoutEnv(os.Environ(), javaEnv)
		return cmd
	}
}

// jettyClasses compiles the Jetty app once per test binary into .bin/jetty
// beside this file, unless what is there was compiled from the source as it
// is, and returns the class files.
var jettyClasses = sync.OnceValues(func() ([]string, error) {
	src, err := sourceDir()
	if err != nil {
		return nil, err
	}
	return javac(filepath.Join(src, "jetty", "Router.java"), filepath.Join(src, ".bin", "jetty"),
		strings.Join(jettyJars, string(os.PathListSeparator)))
})
