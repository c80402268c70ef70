// URLPattern (WHATWG URL Pattern): the urlpattern-polyfill package, which follows the standard
// and its Web Platform Tests; it parses URLs with the global URL (ours, whatwg-url).
import { URLPattern } from 'urlpattern-polyfill/urlpattern';
import { exposeInterface } from './util.js';

exposeInterface(URLPattern, 'URLPattern');

export { URLPattern };
