<?php
// The PHP upstream of testrouter: a front controller, as Symfony and Laravel
// apps have, run by PHP's built-in server as its router script, so that it
// answers every request, files or not. Symfony HttpFoundation builds the
// request, with the _method override enabled, and Symfony Routing matches
// the path info, which HttpFoundation takes from behind the script name:
// /index.php/l/abc is /l/abc.
//
// PHP keeps nothing between requests, so the hit count and the last request
// live in the JSON file ROUTER_STATE names, under a lock: the last request
// as the JSON the control endpoint answers with.
//
// Usage: ROUTER_STATE=FILE php -S 127.0.0.1:PORT index.php

require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';
require_once '/usr/share/php/Symfony/Component/Routing/autoload.php';

use Symfony\Component\HttpFoundation\Exception\SuspiciousOperationException;
use Symfony\Component\HttpFoundation\JsonResponse;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\Routing\Exception\MethodNotAllowedException;
use Symfony\Component\Routing\Exception\ResourceNotFoundException;
use Symfony\Component\Routing\Matcher\UrlMatcher;
use Symfony\Component\Routing\RequestContext;
use Symfony\Component\Routing\Route;
use Symfony\Component\Routing\RouteCollection;

const CONTROL = '/__router/';
const REPORTED = [
    'X-Forwarded-For',
    'X-Forwarded-Host',
    'X-Forwarded-Proto',
    'X-Real-Ip',
    'X-Http-Method-Override',
    'Forwarded',
];

// withState runs $change on the state under an exclusive lock, writes back
// what it returns, and returns that.
function withState(callable $change): array
{
    $f = fopen(getenv('ROUTER_STATE'), 'c+');
    if ($f === false || !flock($f, LOCK_EX)) {
        throw new RuntimeException('testrouter: cannot open the state file ' . getenv('ROUTER_STATE'));
    }
    $text = stream_get_contents($f);
    $state = $text === '' ? ['hits' => 0, 'last' => null] : json_decode($text, true);
    $state = $change($state);
    ftruncate($f, 0);
    rewind($f);
    fwrite($f, json_encode($state, JSON_UNESCAPED_SLASHES));
    fclose($f); // and so unlocks
    return $state;
}

function seen(Request $request, string $path): array
{
    $headers = [];
    foreach (REPORTED as $name) {
        // Joined as Werkzeug and Node join repeated headers, so that every
        // app reports one string per header.
        $values = $request->headers->all(strtolower($name));
        if ($values) {
            $headers[$name] = implode(', ', $values);
        }
    }
    try {
        $host = $request->getHttpHost();
    } catch (UnexpectedValueException $e) { // a Host header Symfony refuses
        $host = (string) $request->headers->get('host');
    }
    return [
        'method' => $request->getMethod(),
        'path' => $path,
        'raw' => (string) $request->server->get('REQUEST_URI'),
        'headers' => (object) $headers,
        'remote_addr' => $request->getClientIp(),
        'scheme' => $request->getScheme(),
        'host' => $host,
    ];
}

function text(string $body, int $status = 200): Response
{
    return new Response($body, $status, ['Content-Type' => 'text/plain; charset=utf-8']);
}

function control(Request $request): Response
{
    $what = $request->getMethod() . ' ' . substr($request->getPathInfo(), strlen(CONTROL));
    switch ($what) {
        case 'GET hits':
            $state = withState(fn ($s) => $s);
            // The process id tells the harness that this app, not another
            // that took its port, is answering.
            return new JsonResponse(['hits' => $state['hits'], 'pid' => getmypid()]);
        case 'POST reset':
            withState(fn ($s) => ['hits' => 0, 'last' => null]);
            return new JsonResponse(['hits' => 0]);
        case 'GET last':
            $state = withState(fn ($s) => $s);
            return JsonResponse::fromJsonString($state['last'] ?? '{}');
    }
    return text("not found\n", 404);
}

function routes(): RouteCollection
{
    $routes = new RouteCollection();
    $routes->add('limited', new Route('/l/{id}', [], [], [], '', [], ['GET', 'DELETE']));
    $routes->add('unlimited', new Route('/u/{rest}', [], ['rest' => '.+'], [], '', [], ['GET']));
    return $routes;
}

function handle(Request $request): Response
{
    if (str_starts_with($request->getPathInfo(), CONTROL)) {
        return control($request);
    }
    // What the matcher matches: it decodes the path info itself.
    $path = rawurldecode($request->getPathInfo());
    withState(function ($s) use ($request, $path) {
        // Kept encoded, so that an empty headers object stays an object;
        // a path that decodes to no UTF-8 is still reported.
        $s['last'] = json_encode(seen($request, $path), JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
        return $s;
    });
    $matcher = new UrlMatcher(routes(), (new RequestContext())->fromRequest($request));
    try {
        $route = $matcher->match($request->getPathInfo());
    } catch (ResourceNotFoundException $e) {
        return text("not found\n", 404);
    } catch (MethodNotAllowedException $e) {
        return new Response("method not allowed\n", 405, [
            'Content-Type' => 'text/plain; charset=utf-8',
            'Allow' => implode(', ', $e->getAllowedMethods()),
        ]);
    }
    if ($route['_route'] === 'limited') {
        withState(function ($s) {
            $s['hits']++;
            return $s;
        });
        return text("limited {$route['id']}\n");
    }
    return text("unlimited $path\n");
}

Request::enableHttpMethodParameterOverride();
$request = Request::createFromGlobals();
try {
    $response = handle($request)->prepare($request);
} catch (SuspiciousOperationException $e) {
    // An override naming no method: the 400 a Symfony kernel answers with.
    $response = text("bad request\n", 400);
}
$response->send();
