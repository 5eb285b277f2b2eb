// SPDX-License-Identifier: Apache-2.0
/* Runs before the first paint: applies the theme chosen with the toggle
 * (kept in localStorage); without a choice the page follows
 * prefers-color-scheme through the stylesheet alone. */
(function () {
  try {
    var t = localStorage.getItem('tenq.theme');
    if (t === 'light' || t === 'dark') document.documentElement.setAttribute('data-theme', t);
  } catch (e) { /* storage may be disabled: follow the system */ }
})();
