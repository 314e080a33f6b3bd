package testrouter

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// tomcatHome is where Debian's tomcat10 puts Catalina: bin/ with the
// bootstrap jars, lib/ with the servlet API and the container.
const tomcatHome = "/usr/share/tomcat10"

// tomcatServerXML is a Catalina with one HTTP connector on 127.0.0.1 and no
// shutdown port, the harness's kill being the only way it ends. The one
// host deploys the exploded ROOT app from the private CATALINA_BASE, once:
// no background thread watches for redeploys.
const tomcatServerXML = `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by testrouter for one test. -->
<Server port="-1">
  <Service name="Catalina">
    <Connector port="%d" address="127.0.0.1" protocol="HTTP/1.1"/>
    <Engine name="Catalina" defaultHost="localhost">%s
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
`

// tomcatValves are the TomcatValves kind's: RemoteIpValve with its
// defaults (X-Forwarded-For and -Proto from loopback and private peers) and
// the host and port headers, and SSLValve with its defaults.
const tomcatValves = `
      <Valve className="org.apache.catalina.valves.RemoteIpValve" hostHeader="X-Forwarded-Host" portHeader="X-Forwarded-Port"/>
      <Valve className="org.apache.catalina.valves.SSLValve"/>`

// tomcatJVMFlags keep a JVM of the harness small and quick to start on a
// small machine: the C1 compiler only, the serial collector, the JDK's
// class data archive where there is one.
var tomcatJVMFlags = []string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"}

// javaEnv are the variables through which an environment adds flags,
// agents or classes to every JVM and javac; the harness's Tomcat and javac
// run without them.
var javaEnv = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH"}

// tomcatCommand readies the Tomcat app (fails t when Tomcat or a JDK is
// missing) in a CATALINA_BASE of its own and returns the command that runs
// Catalina in the foreground on a port, with tomcatValves when valves.
func tomcatCommand(t testing.TB, src string, valves bool) func(port int) *exec.Cmd {
	t.Helper()
	java, err := exec.LookPath("java")
	if err == nil {
		_, err = os.Stat(filepath.Join(tomcatHome, "bin", "bootstrap.jar"))
	}
	if err != nil {
		testneed.Missing(t, "testrouter: %v; the Tomcat kind needs Debian's tomcat10: apt-get install tomcat10", err)
	}
	classes, err := tomcatClasses()
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	base := t.TempDir()
	webInf := filepath.Join(base, "webapps", "ROOT", "WEB-INF")
	metaInf := filepath.Join(base, "webapps", "ROOT", "META-INF")
	for _, dir := range []string{filepath.Join(base, "conf"), filepath.Join(base, "temp"), filepath.Join(webInf, "classes"), metaInf} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
	}
	// A copy per test, so that a test binary compiling anew cannot change
	// the classes under a running Tomcat.
	copies := map[string]string{
		filepath.Join(src, "tomcat", "web.xml"):     filepath.Join(webInf, "web.xml"),
		filepath.Join(src, "tomcat", "context.xml"): filepath.Join(metaInf, "context.xml"),
	}
	for _, class := range classes {
		copies[class] = filepath.Join(webInf, "classes", filepath.Base(class))
	}
	for from, to := range copies {
		if err := copyFile(from, to); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
	}
	serverXML := filepath.Join(base, "conf", "server.xml")
	engineValves := ""
	if valves {
		engineValves = tomcatValves
	}
	return func(port int) *exec.Cmd {
		if err := os.WriteFile(serverXML, fmt.Appendf(nil, tomcatServerXML, port, engineValves), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		args := slices.Concat(tomcatJVMFlags, []string{
			"-Dcatalina.home=" + tomcatHome,
			"-Dcatalina.base=" + base,
			"-Djava.io.tmpdir=" + filepath.Join(base, "temp"),
			// A connector that cannot bind ends the JVM, rather than
			// leaving Catalina running deaf, so that serve sees the exit
			// and tries another port.
			"-Dorg.apache.catalina.startup.EXIT_ON_INIT_FAILURE=true",
			"-classpath", filepath.Join(tomcatHome, "bin", "bootstrap.jar") + string(os.PathListSeparator) +
				filepath.Join(tomcatHome, "bin", "tomcat-juli.jar"),
			"org.apache.catalina.startup.Bootstrap", "start",
		})
		cmd := exec.Command(java, args...)
		cmd.Env = withoutEnv(os.Environ(), javaEnv)
		cmd.Dir = base
		return cmd
	}
}

// tomcatClasses compiles the servlet once per test binary into .bin/tomcat
// beside this file, unless what is there was compiled from the source as
// it is, and returns the class files.
var tomcatClasses = sync.OnceValues(func() ([]string, error) {
	src, err := sourceDir()
	if err != nil {
		return nil, err
	}
	return javac(filepath.Join(src, "tomcat", "Router.java"), filepath.Join(src, ".bin", "tomcat"),
		filepath.Join(tomcatHome, "lib", "servlet-api.jar"))
})

// javac compiles source against classpath (Tomcat's servlet API, or
// Jetty's jars) into outDir. javac
// takes seconds, so the classes are kept across test binaries, stamped with
// the modification time the source had when they were compiled: a source
// changed since, even during the compile, does not match. Each class is
// written under a temporary directory and renamed into outDir, so that test
// binaries compiling at once never see a half-written one.
func javac(source, outDir, classpath string) ([]string, error) {
	info, err := os.Stat(source)
	if err != nil {
		return nil, err
	}
	stamp := info.ModTime()
	name := strings.TrimSuffix(filepath.Base(source), ".java")
	main := filepath.Join(outDir, name+".class")
	if got, err := os.Stat(main); err == nil && got.ModTime().Equal(stamp) {
		return filepath.Glob(filepath.Join(outDir, "*.class"))
	}
	javacCmd, err := exec.LookPath("javac")
	if err != nil {
		return nil, fmt.Errorf("%v; the Java apps are compiled with javac: apt-get install default-jdk-headless", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(outDir), "tomcat.*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	// Java 11 is the oldest Tomcat 10.1 runs on.
	cmd := exec.CommandContext(ctx, javacCmd, "--release", "11", "-encoding", "UTF-8",
		"-classpath", classpath, "-d", tmp, source)
	cmd.Env = withoutEnv(os.Environ(), javaEnv)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile the %s app: javac %s: %v\n%s", filepath.Base(filepath.Dir(source)), source, err, out)
	}
	built, err := filepath.Glob(filepath.Join(tmp, "*.class"))
	if err != nil {
		return nil, err
	}
	// The main class last, so that its stamp vouches for the others.
	for i, class := range built {
		if filepath.Base(class) == name+".class" {
			built[i], built[len(built)-1] = built[len(built)-1], built[i]
		}
	}
	var classes []string
	for _, class := range built {
		if err := os.Chtimes(class, stamp, stamp); err != nil {
			return nil, err
		}
		to := filepath.Join(outDir, filepath.Base(class))
		if err := os.Rename(class, to); err != nil {
			return nil, fmt.Errorf("compile the %s app: %w", filepath.Base(filepath.Dir(source)), err)
		}
		classes = append(classes, to)
	}
	return classes, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
