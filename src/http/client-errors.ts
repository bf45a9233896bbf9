/**
 * The answer to a request Node's HTTP parser refused before any route saw it — its headers too large (431),
 * its headers or body too slow (408), or malformed (400) — with the project's error body
 * (`{statusCode, code, error, message}`, codes from errors.ts), then the connection closed. Used as fastify's
 * `clientErrorHandler` and as the `clientError` listener of the further listeners, so that every listener
 * answers alike.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { BadRequestError, type BaremetalError, HeadersTooLargeError, RequestTimeoutError } from '../errors.js';

/** The error a parser failure (`err.code`, Node's or llhttp's) is answered with. */
function replyError(code: string | undefined): BaremetalError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new RequestTimeoutError('the request did not arrive in time; the connection is closed');
  if (code === 'HPE_HEADER_OVERFLOW')
    return new HeadersTooLargeError('the request headers are larger than 16 KiB; the connection is closed');
  return new BadRequestError('the request is not valid HTTP/1.1; the connection is closed');
}

/** Answers `error` on `socket` (when it can still be written) and closes it. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const reply = replyError(error.code);
    const body = JSON.stringify({
      statusCode: reply.statusCode,
      code: reply.code,
      error: STATUS_CODES[reply.statusCode],
      message: reply.message,
    });
    socket.write(
      `HTTP/1.1 ${reply.statusCode} ${STATUS_CODES[reply.statusCode]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
