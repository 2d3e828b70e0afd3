// Modal dialogs on <dialog>: focus moves in and is trapped by the browser, Escape cancels (except
// for the dialog that shows a new key, which closes only on "I have stored it").
import { ApiError } from './api.js';
import { h, uid } from './dom.js';
import { announce } from './ui.js';

/** Opens a modal with a heading, content and buttons; resolves with the pressed button's value. */
export function modal({ title, content, buttons, cancelValue = null, dismissible = true, initialFocus }) {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    let result = cancelValue;
    let done = false;
    const dialog = h('dialog', {
      'aria-labelledby': titleId,
      closedby: dismissible ? 'closerequest' : 'none',
    });
    // Errors of the dialog's own action show inside it (the page's alert is behind the backdrop).
    const alert = h('p', { class: 'error', role: 'alert' });
    const fail = (err) => {
      alert.textContent =
        err instanceof ApiError ? `${err.error}: ${err.details}` : String(err?.message ?? err);
    };
    const btns = buttons.map((b) =>
      h(
        'button',
        {
          type: 'button',
          class: b.kind ?? '',
          onclick: async () => {
            if (b.onClick && (await b.onClick(fail)) === false) return;
            result = b.value;
            done = true;
            dialog.close();
          },
        },
        b.label,
      ),
    );
    dialog.append(h('h2', { id: titleId }, title), ...content, alert, h('div', { class: 'actions' }, btns));
    dialog.addEventListener('cancel', (e) => {
      if (!dismissible) e.preventDefault();
    });
    dialog.addEventListener('close', () => {
      // A browser may force-close a modal on a repeated Escape: a key not yet confirmed stays up.
      if (!dismissible && !done) return dialog.showModal();
      dialog.remove();
      resolve(result);
    });
    document.body.append(dialog);
    dialog.showModal();
    (initialFocus?.(dialog) ?? btns[btns.length - 1])?.focus();
  });
}

/** Asks before a harmful change; resolves true only when the operator confirms. */
export function confirmAction(title, message, confirmLabel) {
  return modal({
    title,
    content: [h('p', {}, message)],
    buttons: [
      { label: 'Cancel', value: false },
      { label: confirmLabel, value: true, kind: 'danger' },
    ],
    cancelValue: false,
    initialFocus: (d) => d.querySelector('button'),
  });
}

/**
 * Shows a new key, exactly once, with a Copy button. It closes only on "I have stored it"; then the
 * text is removed from the page and the key is forgotten.
 */
export async function showNewKey(created, extra = []) {
  let secret = created.key;
  const code = h('code', { class: 'secret', id: uid('key'), 'aria-label': 'New API key' }, secret);
  const copy = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(secret);
          announce('Key copied to the clipboard.');
          copy.textContent = 'Copied';
        } catch {
          announce('Copy failed: select the key and copy it by hand.');
        }
      },
    },
    'Copy',
  );
  await modal({
    title: 'Your new API key',
    content: [
      h(
        'p',
        {},
        'This is the only time the key is shown. Store it now (a secret manager, the client configuration); ',
        'it cannot be shown again.',
      ),
      code,
      h(
        'p',
        { class: 'muted' },
        `Prefix ${created.prefix} · label ${created.label ?? '—'} · ${created.environment}`,
      ),
      ...extra,
      h('div', {}, copy),
    ],
    buttons: [{ label: 'I have stored it', value: true, kind: 'primary' }],
    dismissible: false,
    initialFocus: () => copy,
  });
  code.textContent = '';
  secret = null;
  created.key = undefined;
}
