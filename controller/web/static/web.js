// What the dealer's panel and the supervisors' console share (loaded before each page's own script).
// Plain JavaScript, no framework, no network. Text goes in through textContent, never innerHTML.
"use strict";

const web = Object.freeze({
  // the element of that id
  $: (id) => document.getElementById(id),
  // a new element of that class, holding that text (none if undefined or null)
  el: (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  },
  // the content of the page's <meta name="..."> (what the server put in the page it served)
  meta: (name) => document.querySelector(`meta[name="${name}"]`).content,
});
