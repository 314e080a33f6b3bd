# The Sinatra upstream of testrouter: a modular Sinatra app with its default
# settings (Rack::Protection among them) and method_override enabled, which
# puts Rack::MethodOverride in front of the routes. Run by puma:
# puma -b tcp://127.0.0.1:PORT config.ru
#
# Rack::MethodOverride turns a POST whose form body says _method=DELETE into
# the DELETE it names, and Sinatra then routes that.
require "sinatra/base"
require_relative "../rack/control"

class App < Sinatra::Base
  enable :method_override
  # Mounted by Sinatra after its own middleware, Rack::MethodOverride
  # included, so that what it records is what the routes see.
  use Control::Record

  limited = lambda do
    Control.hit
    content_type "text/plain", charset: "utf-8"
    "limited #{params[:id]}\n"
  end
  get "/l/:id", &limited
  delete "/l/:id", &limited

  get "/u/*" do
    content_type "text/plain", charset: "utf-8"
    "unlimited #{request.path}\n"
  end
end

use Control::Endpoints
run App
