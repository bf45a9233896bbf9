/**
 * The three checks of the `validator` library the client uses (an IP address, a fully qualified domain name,
 * base64), each imported from its own module: `validator` as a whole costs 13 MB of RSS (issue 53). Each is a
 * CommonJS module whose function is its `default`, unwrapped here once.
 */
import isBase64Module from 'validator/lib/isBase64.js';
import isFQDNModule from 'validator/lib/isFQDN.js';
import isIPModule from 'validator/lib/isIP.js';

/** validator's `isIP`: whether a string is an IPv4 or IPv6 address. */
export const isIP = isIPModule.default;
/** validator's `isFQDN`: whether a string is a fully qualified domain name, under its options. */
export const isFQDN = isFQDNModule.default;
/** validator's `isBase64`: whether a string is base64. */
export const isBase64 = isBase64Module.default;
