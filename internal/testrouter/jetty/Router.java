import java.io.IOException;
import java.security.cert.X509Certificate;
import java.util.Collections;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.ForwardedRequestCustomizer;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.AbstractHandler;

/**
 * The Jetty upstream of testrouter: an embedded Jetty 9.4 whose connector
 * has a ForwardedRequestCustomizer with its defaults, as Jetty's
 * http-forwarded module configures it behind a proxy. It believes, from any
 * peer, X-Forwarded-* and Forwarded for the address, scheme, host and port,
 * X-Proxied-Https for the scheme, Proxy-ssl-id for the TLS session id and
 * Proxy-auth-cert for the cipher suite. It serves the routes and reports
 * what the request became.
 *
 * Usage: java Router PORT
 */
public class Router extends AbstractHandler {
    private static final String[] REPORTED = {
        "X-Forwarded-For",
        "X-Forwarded-Host",
        "X-Forwarded-Proto",
        "X-Real-Ip",
        "X-Http-Method-Override",
        "Forwarded",
    };
    private static final String CONTROL = "/__router/";

    private static final Object lock = new Object(); // guards hits and last
    private static long hits;
    private static String last; // the JSON of the last request, null when none

    @Override
    public void handle(String target, Request base, HttpServletRequest req, HttpServletResponse resp) throws IOException {
        base.setHandled(true);
        String path = req.getPathInfo() == null ? target : req.getPathInfo();
        if (path.startsWith(CONTROL)) {
            control(path.substring(CONTROL.length()), req.getMethod(), resp);
            return;
        }
        record(req, path);
        if (!req.getMethod().equals("GET")) {
            resp.sendError(HttpServletResponse.SC_METHOD_NOT_ALLOWED);
        } else if (path.startsWith("/l/") && path.length() > 3 && path.indexOf('/', 3) < 0) {
            synchronized (lock) {
                hits++;
            }
            text(resp, "limited " + path.substring(3) + "\n");
        } else if (path.startsWith("/u/") && path.length() > 3) {
            text(resp, "unlimited " + path + "\n");
        } else {
            resp.sendError(HttpServletResponse.SC_NOT_FOUND);
        }
    }

    private static void control(String what, String method, HttpServletResponse resp) throws IOException {
        if (what.equals("hits") && method.equals("GET")) {
            // The process id tells the harness that this app, not another
            // that took its port, is answering.
            long n;
            synchronized (lock) {
                n = hits;
            }
            json(resp, "{\"hits\":" + n + ",\"pid\":" + ProcessHandle.current().pid() + "}");
        } else if (what.equals("reset") && method.equals("POST")) {
            synchronized (lock) {
                hits = 0;
                last = null;
            }
            json(resp, "{\"hits\":0}");
        } else if (what.equals("last") && method.equals("GET")) {
            String s;
            synchronized (lock) {
                s = last;
            }
            json(resp, s == null ? "{}" : s);
        } else {
            resp.sendError(HttpServletResponse.SC_NOT_FOUND);
        }
    }

    private static void record(HttpServletRequest req, String path) {
        String raw = req.getRequestURI();
        if (req.getQueryString() != null) {
            raw += "?" + req.getQueryString();
        }
        StringBuilder headers = new StringBuilder();
        for (String name : REPORTED) {
            if (req.getHeader(name) == null) {
                continue;
            }
            String value = String.join(", ", Collections.list(req.getHeaders(name)));
            headers.append(headers.length() == 0 ? "" : ",").append(quote(name)).append(':').append(quote(value));
        }
        String host = req.getHeader("Host");
        String seen = "{\"method\":" + quote(req.getMethod())
            + ",\"path\":" + quote(path)
            + ",\"raw\":" + quote(raw)
            + ",\"headers\":{" + headers + "}"
            + ",\"remote_addr\":" + quote(req.getRemoteAddr())
            + ",\"scheme\":" + quote(req.getScheme())
            + ",\"host\":" + quote(host == null ? req.getServerName() : host)
            + ",\"facts\":{" + facts(req) + "}"
            + "}";
        synchronized (lock) {
            last = seen;
        }
    }

    // facts are what the server believes of the connection: set by the
    // connector, or by the ForwardedRequestCustomizer from headers.
    private static String facts(HttpServletRequest req) {
        StringBuilder b = new StringBuilder();
        b.append("\"secure\":").append(quote(String.valueOf(req.isSecure())));
        b.append(",\"server_name\":").append(quote(req.getServerName()));
        b.append(",\"server_port\":").append(quote(String.valueOf(req.getServerPort())));
        Object certs = req.getAttribute("javax.servlet.request.X509Certificate");
        if (certs instanceof X509Certificate[] && ((X509Certificate[]) certs).length > 0) {
            String subject = ((X509Certificate[]) certs)[0].getSubjectX500Principal().getName();
            b.append(",\"client_cert\":").append(quote(subject));
        }
        for (String name : new String[] {"cipher_suite", "ssl_session_id"}) {
            Object v = req.getAttribute("javax.servlet.request." + name);
            if (v != null) {
                b.append(",").append(quote(name)).append(':').append(quote(String.valueOf(v)));
            }
        }
        return b.toString();
    }

    private static void text(HttpServletResponse resp, String body) throws IOException {
        resp.setContentType("text/plain");
        resp.setCharacterEncoding("UTF-8");
        resp.getWriter().write(body);
    }

    private static void json(HttpServletResponse resp, String body) throws IOException {
        resp.setContentType("application/json");
        resp.setCharacterEncoding("UTF-8");
        resp.getWriter().write(body + "\n");
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        Server server = new Server();
        HttpConfiguration config = new HttpConfiguration();
        config.addCustomizer(new ForwardedRequestCustomizer());
        ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(config));
        connector.setHost("127.0.0.1");
        connector.setPort(Integer.parseInt(args[0]));
        server.addConnector(connector);
        server.setHandler(new Router());
        server.start();
        server.join();
    }
}
