import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.cert.X509Certificate;
import java.util.Collections;

/**
 * The Tomcat upstream of testrouter: one servlet class, declared in web.xml
 * once per route, so that Tomcat's own mapper picks the handler after it has
 * stripped the ;parameters from every segment and resolved dot segments.
 * Each declaration names its route in the init parameter "route"; the state
 * is static, shared by all of them.
 */
public class Router extends HttpServlet {
    private static final String[] REPORTED = {
        "X-Forwarded-For",
        "X-Forwarded-Host",
        "X-Forwarded-Proto",
        "X-Real-Ip",
        "X-Http-Method-Override",
        "Forwarded",
    };

    private static final Object lock = new Object(); // guards hits and last
    private static long hits;
    private static String last; // the JSON of the last request, null when none

    private String route;

    @Override
    public void init() throws ServletException {
        route = getInitParameter("route");
        if (route == null) {
            throw new ServletException("testrouter: servlet " + getServletName() + " has no route");
        }
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
        if (route.equals("control")) {
            control(req, resp);
            return;
        }
        record(req);
        String info = req.getPathInfo();
        boolean routed = false;
        if (route.equals("limited")) {
            routed = info != null && info.length() > 1 && info.indexOf('/', 1) < 0;
        } else if (route.equals("unlimited")) {
            routed = info != null && info.length() > 1;
        }
        if (!routed) {
            resp.sendError(HttpServletResponse.SC_NOT_FOUND);
            return;
        }
        // HttpServlet dispatches on the method and answers 405 for those
        // the route does not override.
        super.service(req, resp);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        if (route.equals("limited")) {
            limited(req, resp);
        } else {
            text(resp, "unlimited " + routedPath(req) + "\n");
        }
    }

    @Override
    protected void doDelete(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
        if (route.equals("limited")) {
            limited(req, resp);
        } else {
            super.doDelete(req, resp);
        }
    }

    private static void limited(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        synchronized (lock) {
            hits++;
        }
        text(resp, "limited " + req.getPathInfo().substring(1) + "\n");
    }

    private static void control(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String what = req.getPathInfo() == null ? "" : req.getPathInfo();
        String method = req.getMethod();
        if (what.equals("/hits") && method.equals("GET")) {
            // The process id tells the harness that this app, not another
            // that took its port, is answering.
            long n;
            synchronized (lock) {
                n = hits;
            }
            json(resp, "{\"hits\":" + n + ",\"pid\":" + ProcessHandle.current().pid() + "}");
        } else if (what.equals("/reset") && method.equals("POST")) {
            synchronized (lock) {
                hits = 0;
                last = null;
            }
            json(resp, "{\"hits\":0}");
        } else if (what.equals("/last") && method.equals("GET")) {
            String s;
            synchronized (lock) {
                s = last;
            }
            json(resp, s == null ? "{}" : s);
        } else {
            resp.sendError(HttpServletResponse.SC_NOT_FOUND);
        }
    }

    private static void record(HttpServletRequest req) {
        String raw = req.getRequestURI();
        if (req.getQueryString() != null) {
            raw += "?" + req.getQueryString();
        }
        StringBuilder headers = new StringBuilder();
        for (String name : REPORTED) {
            if (req.getHeader(name) == null) {
                continue;
            }
            // Joined as Werkzeug and Node join repeated headers, so that
            // every app reports one string per header.
            String value = String.join(", ", Collections.list(req.getHeaders(name)));
            headers.append(headers.length() == 0 ? "" : ",").append(quote(name)).append(':').append(quote(value));
        }
        String host = req.getHeader("Host");
        String seen = "{\"method\":" + quote(req.getMethod())
            + ",\"path\":" + quote(routedPath(req))
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

    // facts are what the container believes of the connection: set by
    // the connector, or by RemoteIpValve and SSLValve from headers.
    private static String facts(HttpServletRequest req) {
        StringBuilder b = new StringBuilder();
        b.append("\"secure\":").append(quote(String.valueOf(req.isSecure())));
        b.append(",\"server_name\":").append(quote(req.getServerName()));
        b.append(",\"server_port\":").append(quote(String.valueOf(req.getServerPort())));
        Object certs = req.getAttribute("jakarta.servlet.request.X509Certificate");
        if (certs instanceof X509Certificate[] && ((X509Certificate[]) certs).length > 0) {
            String subject = ((X509Certificate[]) certs)[0].getSubjectX500Principal().getName();
            b.append(",\"client_cert\":").append(quote(subject));
        }
        for (String name : new String[] {"cipher_suite", "ssl_session_id"}) {
            Object v = req.getAttribute("jakarta.servlet.request." + name);
            if (v != null) {
                b.append(",").append(quote(name)).append(':').append(quote(String.valueOf(v)));
            }
        }
        return b.toString();
    }

    // routedPath is the decoded, normalised path the mapper matched.
    private static String routedPath(HttpServletRequest req) {
        String info = req.getPathInfo();
        return req.getServletPath() + (info == null ? "" : info);
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
}
