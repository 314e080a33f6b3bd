// The Express upstream of testrouter: Express 4 with its default settings,
// behind the method-override middleware reading X-HTTP-Method-Override and,
// as its README shows, the _method query parameter.
//
// By default Express routes case-insensitively and ignores a trailing slash,
// so /L/abc and /l/abc/ both reach /l/:id; method-override lets a POST carry
// the method it is routed as, so POST /l/abc with X-HTTP-Method-Override: GET
// runs the GET handler, and POST /l/abc?_method=DELETE the DELETE one.
// Express matches routes on the raw (undecoded) path and decodes only the
// parameters, so /l/a%2Fb reaches /l/:id with id "a/b".
//
// GET /a counts as the limited handler when it reads a credential from
// Authorization, with basic-auth for Basic as Express apps usually do.
//
// Usage: node app.js PORT
'use strict';

const express = require('express');
const basicAuth = require('basic-auth');
const methodOverride = require('method-override');

const CONTROL = '/__router/';
const REPORTED = [
  'X-Forwarded-For',
  'X-Forwarded-Host',
  'X-Forwarded-Proto',
  'X-Real-Ip',
  'X-Http-Method-Override',
  'Forwarded',
];

const port = Number(process.argv[2]);
if (process.argv.length !== 3 || !Number.isInteger(port)) {
  console.error('usage: node app.js PORT');
  process.exit(2);
}

let hits = 0;
let last = null;

const app = express();

// The control endpoints come first, so that neither method-override nor the
// record below touches them.
// The process id tells the harness that this app, not another that took its
// port, is answering.
app.get(CONTROL + 'hits', (req, res) => res.json({ hits, pid: process.pid }));
app.post(CONTROL + 'reset', (req, res) => {
  hits = 0;
  last = null;
  res.json({ hits });
});
app.get(CONTROL + 'last', (req, res) => res.json(last || {}));

app.use(methodOverride('X-HTTP-Method-Override'));
app.use(methodOverride('_method'));

// Recorded after method-override, so that method is the one Express routes.
app.use((req, res, next) => {
  const headers = {};
  for (const name of REPORTED) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value;
  }
  last = {
    method: req.method,
    path: req.path,
    raw: req.originalUrl,
    headers,
    remote_addr: req.ip,
    scheme: req.protocol,
    host: req.get('Host') || '',
  };
  next();
});

function limited(req, res) {
  hits++;
  res.type('text/plain').send(`limited ${req.params.id}\n`);
}
app.get('/l/:id', limited);
app.delete('/l/:id', limited);

// The credential as apps usually read it: basic-auth for Basic, and for
// any other scheme the word after the first space.
function credential(req) {
  const header = req.get('Authorization');
  if (header === undefined) return undefined;
  const scheme = header.trim().split(' ')[0];
  if (scheme.toLowerCase() === 'basic') {
    const creds = basicAuth(req);
    return creds && `${creds.name}:${creds.pass}`;
  }
  return header.trim().split(' ')[1] || undefined;
}

app.get('/a', (req, res) => {
  const got = credential(req);
  if (got === undefined) {
    res.status(401).type('text/plain').send('no credential\n');
    return;
  }
  hits++;
  res.type('text/plain').send(`credential ${got}\n`);
});

app.get('/u/*', (req, res) => {
  res.type('text/plain').send(`unlimited ${req.path}\n`);
});

app.listen(port, '127.0.0.1', () => {
  console.log(`express listening on 127.0.0.1:${port}`);
});
