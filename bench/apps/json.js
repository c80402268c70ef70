// bench scenario "json": builds 200 objects with a few fields and returns them as JSON.
import { makeItems } from './shared.js';

export default {
  fetch() {
    return Response.json(makeItems());
  },
};
