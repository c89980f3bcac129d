// The dashboard's short poll: every few seconds, fetch the page's figures (?fragment=1) and swap them in.
"use strict";
(function () {
  const board = document.getElementById("nexus-dashboard");
  if (!board) return;
  const every = 1000 * (Number(board.dataset.refreshSeconds) || 5);
  async function refresh() {
    if (document.hidden) return;
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      // A redirect is the login page (the session ended): keep the last figures.
      if (!response.ok || response.redirected) return;
      board.innerHTML = await response.text();
      board.dataset.refreshes = String(Number(board.dataset.refreshes || 0) + 1);
    } catch (error) {
      // Offline for a moment: try again at the next tick.
    }
  }
  setInterval(refresh, every);
})();
