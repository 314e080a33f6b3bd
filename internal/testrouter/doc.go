// Package testrouter runs a real upstream web app for one test, so that the
// test can check what reaches the app through admit: not a model of a router
// but the router itself, with whatever it decodes, folds or forgives that
// Go 1.22's ServeMux does not.
//
// Every [Kind] of app serves the same routes:
//
//   - GET /l/<id>, exactly one segment after /l/: the limited handler. It
//     answers 200 "limited <id>\n" and counts each run; [Router.Hits] reads
//     the count.
//   - GET /u/<anything>, one segment or more: an unlimited handler that
//     answers 200 "unlimited <path it saw>\n" and counts nothing.
//   - DELETE /l/<id>, on Express, Rails, Sinatra, Tomcat and PHP: the
//     limited handler too, with the same count, so that a method override
//     naming DELETE has a limited route to reach.
//   - GET /a, on Flask and Express: the limited handler's count for a
//     route keyed by credential. It reads the Authorization header as apps
//     usually do (Werkzeug's request.authorization; basic-auth, or the
//     word after the scheme) and answers 200 "credential <user:password or
//     token>\n", counting the run, or 401 "no credential\n".
//   - anything else: the app's own 404 (or 405).
//
// and records the last request it routed, as it saw it ([Router.Last]). A
// test sends a spelling of a limited request through admit, and asserts that
// the limited handler ran no more often than the limit allows, whatever the
// app made of the spelling:
//
//	up := testrouter.Start(t, testrouter.Express)
//	proxy := ... // admit in front of up.URL, limiting /l/ to one request
//	get(proxy, "/l/abc")
//	get(proxy, "/L/abc") // Express routes this to /l/:id too
//	if n := up.Hits(t); n > 1 {
//		t.Errorf("limited handler ran %d times, want at most 1", n)
//	}
//
// The apps keep their counters behind control endpoints under /__router/,
// a path no spelling of /l/ or /u/ can reach, and do not record requests to
// them.
//
// Each app runs as a child process on a free loopback port, bound to
// 127.0.0.1 only, with its log in the test's temporary directory; it is
// killed when the test ends and, on Linux, when the test binary dies. [Start]
// returns once the app answers, and fails the test with the end of the app's
// log if it exits or does not answer within 30 seconds.
//
// [StartFront] runs the other side: a real proxy in front of the server
// under test, configured as operators configure it, so that a test can
// check what the server makes of a client talking to that proxy. Each
// [FrontKind] passes every request to the server from [FrontSource]:
// nginx appending to X-Forwarded-For, HAProxy in HTTP mode with option
// forwardfor, and HAProxy in TCP mode sending the PROXY protocol v2. A
// front answers its readiness check on a port of its own, so that nothing
// of the harness reaches the server, and runs, logs and dies as the apps do.
//
//	front := testrouter.StartFront(t, testrouter.NginxFront, admitAddr)
//	get(front.URL+"/l/abc", "X-Forwarded-For: 1.2.3.4") // keyed as the client, not 1.2.3.4
//
// [SwitchingKinds] are servers that switch to HTTP/2 on Upgrade: h2c
// (hypercorn, and nghttpx in front of the Go app), for tests that hold an
// upgrade's tunnel to what admit forwards; they serve the routes above
// but are not among [Kinds].
//
// What each kind needs is never skipped when missing: the test fails and
// says what to install. Flask needs Debian's python3-flask, Django
// python3-django and Tornado python3-tornado (all run by /usr/bin/python3,
// never another Python on PATH), Express needs node and
// npm (the first Start runs npm ci into express/node_modules), NginxGo and
// NginxFront need Debian's nginx (/usr/sbin/nginx), the HAProxy fronts need
// Debian's haproxy (/usr/sbin/haproxy), and the Go apps need the go
// command, which builds them once per test binary into .bin beside this
// file, and, for Gorilla, the module proxy or a module cache holding
// gorilla/mux. Tomcat and TomcatValves need Debian's tomcat10 (Catalina from
// /usr/share/tomcat10, run with a private CATALINA_BASE, never the system
// service), the java it depends on, and javac (Debian's
// default-jdk-headless), which compiles the servlet into .bin beside this
// file when its source changed. Jetty needs Debian's libjetty9-java and
// javac, which compiles the app the same way. PHP needs Debian's php-cli (/usr/bin/php)
// with php-symfony-routing and php-symfony-http-foundation. Rails and
// Sinatra need Debian's ruby-actionpack and ruby-sinatra, run by Debian's
// puma (/usr/bin/puma, on /usr/bin/ruby) with Ruby's gem and Rack
// environment variables cleared. The kinds with nginx in front need nginx
// as well as what their app needs. WSGIRef needs only Debian's python3;
// Hypercorn needs Debian's python3-hypercorn, and NghttpxGo Debian's
// nghttp2-proxy (/usr/sbin/nghttpx) and the go command.
//
// Runs on Unix systems only.
package testrouter
