# The Rails upstream of testrouter: a Rails route set, with the usual route
# declarations, behind Rack::MethodOverride, which every Rails app has in its
# middleware stack. Run by puma: puma -b tcp://127.0.0.1:PORT config.ru
#
# Rails appends an optional (.:format) to every route, so /l/abc.json reaches
# /l/:id with id abc. Rack::MethodOverride turns a POST whose form body says
# _method=DELETE into the DELETE it names, and the router then routes that.
require "action_controller"
require_relative "../rack/control"

class LimitedController < ActionController::API
  def show
    Control.hit
    render plain: "limited #{params[:id]}\n"
  end
end

class UnlimitedController < ActionController::API
  def show
    render plain: "unlimited #{request.path}\n"
  end
end

routes = ActionDispatch::Routing::RouteSet.new
routes.draw do
  get "/l/:id", to: "limited#show"
  delete "/l/:id", to: "limited#show"
  get "/u/*rest", to: "unlimited#show"
end

use Control::Endpoints
use Rack::MethodOverride
use Control::Record
run routes
