# The bookkeeping the Rack upstreams of testrouter share, as upstream/ is for
# the Go apps: the hit counter of the limited handler, the record of the last
# request, and the control endpoints that report both, in the JSON shapes
# every testrouter app answers with. Each app brings only its router.
require "json"

module Control
  PREFIX = "/__router/"
  REPORTED = %w[
    X-Forwarded-For
    X-Forwarded-Host
    X-Forwarded-Proto
    X-Real-Ip
    X-Http-Method-Override
    Forwarded
  ].freeze

  @lock = Mutex.new # guards @hits and @last: puma serves on several threads
  @hits = 0
  @last = nil

  class << self
    # Records one run of the limited handler.
    def hit
      @lock.synchronize { @hits += 1 }
    end

    def control(method, path)
      case [method, path]
      # The process id tells the harness that this app, not another that
      # took its port, is answering.
      when ["GET", PREFIX + "hits"]
        json(@lock.synchronize { { hits: @hits, pid: Process.pid } })
      when ["POST", PREFIX + "reset"]
        @lock.synchronize { @hits, @last = 0, nil }
        json(hits: 0)
      when ["GET", PREFIX + "last"]
        json(@lock.synchronize { @last } || {})
      else
        [404, { "Content-Type" => "text/plain" }, ["no such control endpoint\n"]]
      end
    end

    def record(env)
      headers = {}
      REPORTED.each do |name|
        value = env["HTTP_" + name.upcase.tr("-", "_")]
        headers[name] = value unless value.nil?
      end
      seen = {
        method: env["REQUEST_METHOD"],
        # PATH_INFO as puma passes it, undecoded: what Rack routers match.
        path: env["PATH_INFO"],
        raw: env["REQUEST_URI"] || "",
        headers: headers,
        remote_addr: env["REMOTE_ADDR"],
        scheme: env["rack.url_scheme"],
        host: env["HTTP_HOST"] || "",
      }
      @lock.synchronize { @last = seen }
    end

    private

    def json(value)
      [200, { "Content-Type" => "application/json" }, [JSON.generate(value) + "\n"]]
    end
  end

  # Answers the control endpoints itself. An app mounts it before anything
  # that could rewrite the request, so that no spelling of a routed path
  # reaches them and they are not recorded.
  class Endpoints
    def initialize(app)
      @app = app
    end

    def call(env)
      path = env["PATH_INFO"]
      return @app.call(env) unless path.start_with?(PREFIX)
      Control.control(env["REQUEST_METHOD"], path)
    end
  end

  # Records each request as the last one. An app mounts it after
  # Rack::MethodOverride, so that the method is the one its router routes.
  class Record
    def initialize(app)
      @app = app
    end

    def call(env)
      Control.record(env)
      @app.call(env)
    end
  end
end
