//! Other languages' words for what tools do and work on, so a query written in French, German,
//! Spanish, Portuguese, Italian, Chinese or Japanese meets tools named and described in English.
//! The table is general vocabulary (the everyday verbs and nouns of software, documents, mail,
//! calendars and the web), not fitted to any tool set. Latin-script words match whole
//! (lowercase, accents as written or dropped); Chinese and Japanese words match inside the
//! query's text, which has no spaces to split on.

use std::collections::HashMap;
use std::sync::OnceLock;

/// English term(s), then the other languages' words for them.
const LEXICON: &[(&str, &str)] = &[
    // Actions.
    (
        "create",
        "créer crée créez creer cree erstellen erstelle erstellt anlegen lege neu crear crea cree criar cria crie creare crea 创建 新建 建立 作成 作る 新規",
    ),
    (
        "delete",
        "supprimer supprime supprimez effacer löschen lösche entfernen entferne eliminar elimina borrar borra excluir exclua apagar apague eliminare elimina cancellare cancella 删除 删掉 移除 削除 消す 消去",
    ),
    (
        "remove",
        "retirer retire enlever entfernen entferne quitar quita remover remova rimuovere rimuovi 移除 去掉 取り除く 外す",
    ),
    (
        "list",
        "lister liste listez auflisten liste zeige listar lista listare elenca elenco 列出 列表 一覧 リスト 一覧表示",
    ),
    (
        "show",
        "afficher affiche montrer montre anzeigen zeige zeigen mostrar muestra mostra mostrare 显示 查看 表示 見せる",
    ),
    (
        "get",
        "obtenir obtiens récupérer recupere holen hole abrufen obtener obten obtém obter ottenere ottieni recuperare 获取 取得 得る",
    ),
    (
        "search find",
        "chercher cherche rechercher recherche trouver trouve suchen suche finden finde durchsuchen buscar busca encontrar encuentra procurar procure pesquisar pesquise cercare cerca trovare trova 搜索 查找 寻找 找 検索 探す 調べる",
    ),
    (
        "send",
        "envoyer envoie envoyez senden sende schicken schicke verschicken enviar envía envia envie inviare invia mandare manda 发送 发 送る 送信",
    ),
    ("read", "lire lis lesen lies leer lee ler leia leggere leggi 读取 阅读 读 読む 読み込む"),
    (
        "write",
        "écrire ecrire écris schreiben schreibe escribir escribe escrever escreva scrivere scrivi 写入 写 書く 書き込む",
    ),
    (
        "update edit",
        "mettre modifier modifie modifiez éditer editer aktualisieren aktualisiere ändern ändere bearbeiten bearbeite actualizar actualiza editar edita modificar modifica atualizar atualize aggiornare aggiorna modificare 更新 修改 编辑 更改 変更 編集 修正",
    ),
    (
        "rename",
        "renommer renomme umbenennen benenne renombrar renombra renomear renomeie rinominare rinomina 重命名 改名 名前を変更 リネーム",
    ),
    ("move", "déplacer deplacer déplace verschieben verschiebe mover mueve mova spostare sposta 移动 移到 移動"),
    (
        "copy duplicate",
        "copier copie dupliquer kopieren kopiere duplizieren copiar copia duplicar copiare duplicare 复制 拷贝 コピー 複製",
    ),
    (
        "open navigate",
        "ouvrir ouvre öffnen öffne navigieren abrir abre aprire apri navigare 打开 访问 開く 移動する アクセス",
    ),
    ("close", "fermer ferme schließen schliesse schließe cerrar cierra fechar feche chiudere chiudi 关闭 閉じる"),
    (
        "download",
        "télécharger telecharger télécharge herunterladen lade descargar descarga baixar baixe scaricare scarica 下载 ダウンロード",
    ),
    ("upload", "téléverser televerser hochladen subir sube carregar caricare carica 上传 アップロード"),
    (
        "run execute",
        "exécuter executer exécute lancer lance ausführen führe starten starte ejecutar ejecuta executar execute eseguire esegui 运行 执行 実行 走らせる",
    ),
    (
        "stop",
        "arrêter arreter arrête stoppen stoppe beenden beende detener detén parar pare fermare ferma 停止 停下 止める 停止する",
    ),
    ("start", "démarrer demarrer démarre starten starte iniciar inicia avviare avvia 启动 开始 起動 開始"),
    ("restart", "redémarrer redemarrer neustarten reiniciar reinicia riavviare riavvia 重启 重新启动 再起動"),
    ("merge", "fusionner fusionne zusammenführen mergen fusionar fusiona mesclar mescle unire unisci 合并 マージ 統合"),
    (
        "comment",
        "commenter commentaire kommentieren kommentar comentar comentario comentário commentare commento 评论 评论一下 コメント",
    ),
    (
        "reply",
        "répondre repondre réponds antworten antworte responder responde rispondere rispondi 回复 回答 返信 返事",
    ),
    (
        "assign",
        "assigner attribuer zuweisen weise asignar asigna atribuir atribua assegnare assegna 分配 指派 割り当て アサイン",
    ),
    ("close resolve", "résoudre resoudre erledigen lösen resolver resuelve risolvere risolvi 解决 解決"),
    (
        "add",
        "ajouter ajoute ajoutez hinzufügen hinzufuegen füge fuege añadir anadir añade agregar agrega adicionar adicione aggiungere aggiungi 添加 加 追加 加える",
    ),
    ("count", "compter compte zählen zähle contar cuenta conta contare conta 统计 计数 数える カウント"),
    (
        "check status",
        "vérifier verifier vérifie statut prüfen prüfe überprüfen zustand verificar verifica estado comprobar controllare controlla stato 检查 状态 確認 状態 ステータス",
    ),
    (
        "schedule",
        "planifier planifie programmer planen plane programar programa agendar agende pianificare pianifica 安排 预约 计划 予約 スケジュール 予定を入れる",
    ),
    ("invite", "inviter invite einladen lade invitar invita convidar convide invitare invita 邀请 招待"),
    ("translate", "traduire traduis übersetzen übersetze traducir traduce traduzir traduza tradurre traduci 翻译 翻訳"),
    (
        "summarize",
        "résumer resumer résume zusammenfassen fasse resumir resume riassumere riassumi 总结 摘要 要約 まとめる",
    ),
    (
        "share",
        "partager partage teilen teile compartir comparte compartilhar compartilhe condividere condividi 分享 共享 共有",
    ),
    (
        "archive",
        "archiver archive archivieren archiviere archivar archiva arquivar arquive archiviare archivia 归档 存档 アーカイブ",
    ),
    (
        "restore",
        "restaurer restaure wiederherstellen stelle restaurar restaura ripristinare ripristina 恢复 还原 復元 元に戻す",
    ),
    (
        "approve",
        "approuver approuve genehmigen genehmige aprobar aprueba aprovar aprove approvare approva 批准 同意 承認",
    ),
    ("publish", "publier publie veröffentlichen veroeffentlichen publicar publica pubblicare pubblica 发布 公開 投稿"),
    ("install", "installer installe installieren installiere instalar instala installare installa 安装 インストール"),
    (
        "deploy",
        "déployer deployer déploie bereitstellen deployen desplegar despliega implantar implementar distribuire 部署 デプロイ",
    ),
    ("subscribe", "abonner abonnieren suscribir inscrever iscrivere 订阅 購読"),
    ("pay", "payer paie bezahlen zahle pagar paga pagare 支付 付款 支払う 払う"),
    (
        "book reserve",
        "réserver reserver réserve buchen buche reservieren reservar reserva prenotare prenota 预订 预定 予約する",
    ),
    ("sort", "trier trie sortieren sortiere ordenar ordena ordinare ordina 排序 並べ替え ソート"),
    (
        "compare diff",
        "comparer compare vergleichen vergleiche comparar compara confrontare confronta 比较 对比 比較 差分",
    ),
    ("convert", "convertir convertis konvertieren umwandeln converter converta convertire converti 转换 変換"),
    (
        "screenshot",
        "capture écran ecran bildschirmfoto screenshot captura pantalla tela schermata 截图 截屏 屏幕截图 スクリーンショット 画面キャプチャ",
    ),
    ("click", "cliquer clique klicken klicke hacer clic clicar clique cliccare clicca 点击 单击 クリック"),
    (
        "type fill",
        "taper saisir remplir tippen eingeben ausfüllen escribir rellenar digitar preencher digitare compilare 输入 填写 入力 記入",
    ),
    ("log in", "connecter connexion anmelden einloggen iniciar sesión entrar accedere 登录 登陆 ログイン"),
    // Things.
    ("file", "fichier fichiers datei dateien archivo archivos arquivo arquivos file 文件 檔案 ファイル"),
    (
        "directory folder",
        "dossier répertoire repertoire ordner verzeichnis carpeta directorio pasta diretório cartella 文件夹 目录 フォルダ ディレクトリ",
    ),
    (
        "email mail",
        "courriel e-mail mél mel courrier mail e-mail correo correos email e-mail posta 邮件 电子邮件 邮箱 メール 電子メール",
    ),
    ("inbox", "boîte réception boite posteingang bandeja entrada caixa posta arrivo 收件箱 受信箱 受信トレイ"),
    (
        "message",
        "message messages nachricht nachrichten mensaje mensajes mensagem mensagens messaggio messaggi 消息 信息 讯息 メッセージ",
    ),
    ("channel", "canal chaîne chaine kanal canal canale 频道 チャンネル"),
    ("calendar", "calendrier agenda kalender calendario calendário 日历 日程 カレンダー"),
    (
        "event meeting",
        "événement evenement réunion reunion rendez-vous termin besprechung veranstaltung ereignis evento reunión reunião riunione appuntamento 事件 活动 会议 约会 イベント 会議 予定 ミーティング",
    ),
    (
        "issue ticket",
        "ticket tickets problème probleme anomalie ticket vorgang fehler incidencia problema chamado problema segnalazione 问题 工单 议题 課題 チケット 問題",
    ),
    ("bug", "bogue bug fehler error erro errore 缺陷 错误 バグ 不具合"),
    (
        "pull request",
        "demande fusion pull-request anfrage solicitud extracción richiesta 拉取请求 合并请求 プルリクエスト",
    ),
    ("merge request", "demande fusion merge-request 合并请求 マージリクエスト"),
    ("branch", "branche zweig rama ramo branch 分支 ブランチ"),
    ("commit", "commit validation commit commit confirmación 提交 コミット"),
    ("repository", "dépôt depot référentiel repository repo repositorio repositório 仓库 存储库 代码库 リポジトリ"),
    (
        "release version",
        "version versions veröffentlichung versión lanzamiento versão versione rilascio 版本 发布 リリース バージョン",
    ),
    ("tag label", "étiquette etiquette libellé label etikett schlagwort etiqueta rótulo etichetta 标签 タグ ラベル"),
    ("user", "utilisateur utilisatrice benutzer nutzer usuario usuário utente 用户 ユーザー"),
    ("contact", "kontakt contacto contato contatto 联系人 連絡先"),
    ("team", "équipe equipe mannschaft equipo equipe squadra 团队 チーム"),
    ("project", "projet projekt proyecto projeto progetto 项目 工程 プロジェクト"),
    ("task todo", "tâche tache aufgabe aufgaben tarea tarefa attività compito 任务 待办 タスク やること"),
    ("page", "page seite página pagina 页面 网页 ページ"),
    ("document", "document dokument documento 文档 文件 ドキュメント 文書"),
    ("spreadsheet sheet", "tableur feuille tabelle hoja cálculo planilha foglio 电子表格 表格 スプレッドシート シート"),
    (
        "presentation slide",
        "présentation diapositive präsentation folie presentación diapositiva apresentação slide presentazione diapositiva 演示文稿 幻灯片 プレゼンテーション スライド",
    ),
    ("table", "table tableau tabelle tabla tabela tabella 表 テーブル"),
    ("database", "base données datenbank base datos banco dados database 数据库 データベース"),
    ("query", "requête requete abfrage consulta query interrogazione 查询 クエリ 問い合わせ"),
    ("row record", "ligne enregistrement zeile datensatz fila registro linha riga 行 记录 レコード"),
    ("column", "colonne spalte columna coluna colonna 列 カラム"),
    ("image picture photo", "image photo bild foto imagen foto imagem immagine 图片 图像 照片 画像 写真"),
    ("video", "vidéo video vídeo 视频 動画 ビデオ"),
    ("link url", "lien adresse verknüpfung enlace dirección url link collegamento 链接 网址 リンク アドレス"),
    ("website web site", "site internet webseite sitio web página site 网站 ウェブサイト サイト"),
    ("browser", "navigateur browser navegador 浏览器 ブラウザ"),
    ("tab", "onglet registerkarte pestaña aba scheda 标签页 タブ"),
    ("password secret", "mot passe passwort kennwort contraseña senha password segreto 密码 パスワード 秘密"),
    ("key", "clé cle schlüssel clave chave chiave 密钥 キー 鍵"),
    ("log", "journal protokoll registro registro log 日志 ログ"),
    ("error", "erreur fehler error erro errore 错误 报错 エラー"),
    ("container", "conteneur container contenedor contêiner contenitore 容器 コンテナ"),
    ("pod", "pod 容器组 ポッド"),
    ("cluster", "grappe cluster clúster 集群 クラスタ"),
    ("server", "serveur server servidor 服务器 サーバー"),
    ("instance", "instance instanz instancia instância istanza 实例 インスタンス"),
    (
        "bucket storage",
        "compartiment stockage speicher almacenamiento armazenamento archiviazione 存储桶 存储 バケット ストレージ",
    ),
    (
        "cost bill invoice",
        "coût cout facture kosten rechnung costo factura custo fatura fattura 费用 账单 发票 コスト 請求書 料金",
    ),
    ("payment", "paiement zahlung pago pagamento 付款 支付 支払い"),
    ("customer", "client kunde cliente 客户 顧客"),
    ("product", "produit produkt producto produto prodotto 产品 商品 製品"),
    ("order", "commande bestellung pedido ordine 订单 注文"),
    ("note", "note notiz nota 笔记 备注 ノート メモ"),
    ("comment", "remarque anmerkung comentario nota 评论 备注 コメント"),
    ("weather", "météo meteo wetter clima tiempo tempo 天气 天気"),
    ("time", "heure temps zeit uhrzeit hora tiempo ora 时间 時間 時刻"),
    ("today", "aujourd'hui aujourdhui heute hoy hoje oggi 今天 今日"),
    ("tomorrow", "demain morgen mañana manana amanhã amanha domani 明天 明日"),
    ("yesterday", "hier gestern ayer ontem ieri 昨天 昨日"),
    ("week", "semaine woche semana settimana 周 星期 週"),
    ("new", "nouveau nouvelle neu neue nuevo nueva novo nova nuovo nuova 新 新しい"),
    ("all", "tous toutes alle todos todas tutti 所有 全部 すべて 全て"),
    ("my", "mes mon ma meine mein mis mi meus minhas miei mie 我的 私の"),
    ("recent latest", "récent recent dernier letzte neueste reciente último ultimo recente 最近 最新"),
    ("unread", "non lu ungelesen no leído não lido non letto 未读 未読"),
    ("open", "ouvert offen abierto aberto aperto 未关闭 オープン"),
    ("notification", "notification benachrichtigung notificación notificação notifica 通知"),
    ("map location", "carte emplacement karte ort mapa ubicación localização mappa posizione 地图 位置 地図 場所"),
    (
        "route direction",
        "itinéraire itineraire route wegbeschreibung ruta direcciones rota percorso indicazioni 路线 导航 ルート 道順",
    ),
    ("translation", "traduction übersetzung traducción tradução traduzione 翻译 翻訳"),
    ("code", "code quellcode código codice 代码 コード"),
    ("function", "fonction funktion función função funzione 函数 関数"),
    ("test", "test essai prueba teste 测试 テスト"),
    ("workflow pipeline", "flux pipeline arbeitsablauf flujo fluxo 工作流 流水线 ワークフロー パイプライン"),
    ("alert", "alerte warnung alerta avviso 告警 警报 アラート"),
    ("dashboard", "tableau bord dashboard panel painel cruscotto 仪表板 仪表盘 ダッシュボード"),
    ("metric", "métrique metrique metrik métrica metrica 指标 メトリクス"),
    ("star", "étoile etoile stern estrella estrela stella 星标 スター"),
    ("fork", "fourche fork bifurcación 分叉 フォーク"),
    ("star favourite", "favori favorit favorito 收藏 お気に入り"),
    // More of the everyday vocabulary of tools' names: the words many servers' tools are named
    // with, each in the same seven languages. Words that are also English words are left out.
    ("manage", "gérer gère gerer verwalten verwalte gestionar gestiona gerenciar gerencie gestire gestisci 管理"),
    ("group", "groupe gruppe gruppen grupo grupos gruppo gruppi 分组 群组 グループ"),
    (
        "set configure",
        "définir definir configurer einstellen festlegen konfigurieren konfiguriere configurar configura impostare imposta 设置 设定 設定",
    ),
    (
        "config configuration",
        "konfiguration configuración configuracion configuração configuracao configurazione 配置 構成",
    ),
    ("text", "texte texto testo 文本 文字 テキスト"),
    ("template", "vorlage vorlagen plantilla plantillas 模板 テンプレート"),
    ("content", "contenu inhalt contenido conteúdo conteudo contenuto 内容 コンテンツ"),
    ("reaction", "réaction reaktion reacción reaccion reação reacao reazione 反应 リアクション"),
    ("describe", "décrire decrire beschreiben beschreibe describir descrever descreva descrivere descrivi 描述 説明"),
    ("drive", "云端硬盘 网盘 ドライブ"),
    ("import", "importer importe importieren importiere importar importa importare 导入 インポート"),
    ("export", "exporter exporte exportieren exportiere exportar exporta esportare esporta 导出 エクスポート"),
    (
        "review",
        "réviser reviser relire überprüfen überprüfe prüfen prüfe revisar revisa revisão revisao revisione rivedere rivedi 审查 审核 评审",
    ),
    (
        "generate",
        "générer generer génère generieren generiere erzeugen erzeuge generar genera gerar gere generare 生成",
    ),
    ("attachment", "jointe jointes anhang anhänge adjunto adjuntos anexo anexos allegato allegati 附件 添付"),
    ("range", "plage bereich rango intervalo intervallo 范围 範囲"),
    (
        "trigger",
        "déclencher declencher déclenche auslösen auslöser disparar disparador attivare innescare 触发 トリガー",
    ),
    ("analyze", "analyser analyse analysieren analysiere analizar analiza analisar analise analizzare analizza 分析"),
    ("draft", "brouillon entwurf borrador rascunho bozza 草稿 下書き"),
    ("price pricing", "preis precio preço preco prezzo 价格 価格 料金"),
    ("paper", "artikel artículo articulo artigo articolo 论文 論文"),
    ("queue", "warteschlange coda 队列 キュー"),
    ("script", "skript guion 脚本 スクリプト"),
    ("platform", "plateforme plattform plataforma piattaforma 平台 プラットフォーム"),
    ("form", "formulaire formular formulario formulário formulario 表单 フォーム"),
    ("research", "forschung investigación investigacion 研究 調査"),
    ("discussion", "diskussion discusión discusion discussão discussao discussione 讨论 議論 ディスカッション"),
    ("format", "formater formatieren formatiere formatear formatar formattare 格式化 フォーマット 書式"),
    ("block", "bloquer blockieren blockiere sperren sperre bloquear bloquea bloccare blocca 屏蔽 阻止 ブロック"),
    ("monitor", "surveiller surveille überwachen überwache monitorear vigilar monitorar monitorare 监控 監視 モニター"),
    ("field", "feld felder campo campos campi 字段 フィールド"),
    (
        "insert",
        "insérer inserer insère einfügen füge einfuegen insertar inserta inserir insira inserire inserisci 插入 挿入",
    ),
    ("push", "pousser pushen 推送 プッシュ"),
    ("access permission", "accès acces zugriff zugang acceso acesso accesso 访问 权限 アクセス 権限"),
    (
        "permission",
        "autorisation berechtigung berechtigungen permiso permisos permissão permissao permesso permessi 許可",
    ),
    ("session", "séance sitzung sesión sesion sessão sessao sessione 会话 セッション"),
    ("console", "konsole consola 控制台 コンソール"),
    ("chart", "graphique diagramm grafik gráfico grafico 图表 グラフ チャート"),
    ("details", "détails detalles detalhes dettagli 详情 詳細"),
    ("performance", "leistung rendimiento desempenho prestazioni 性能 パフォーマンス"),
    ("audit", "auditer auditoría auditoria 审计 監査"),
    ("paragraph", "paragraphe absatz párrafo parrafo parágrafo paragrafo 段落"),
    ("history log", "historique verlauf historial histórico historico cronologia 历史 履歴"),
    (
        "replace",
        "remplacer remplace ersetzen ersetze reemplazar reemplaza substituir substitua sostituire sostituisci 替换 置換 置き換え",
    ),
    ("state status", "état etat zustand estado stato 状态 状態"),
    ("validate verify", "valider validieren validiere validar valida convalidare 验证 校验 検証"),
    ("verify check", "vérifier verifier überprüfe verificar verifica verificare 核实 確認"),
    ("wait", "attendre warten warte esperar espera aspettare aspetta 等待 待つ"),
    ("category", "catégorie categorie kategorie categoría categoria 类别 分类 カテゴリ"),
    ("apply", "appliquer applique anwenden wende aplicar aplica applicare applica 適用"),
    ("role", "rôle rolle ruolo 角色 役割"),
    ("network", "réseau reseau netzwerk rede rete 网络 ネットワーク"),
    ("cell", "cellule zelle celda célula celula cella 单元格 セル"),
    ("mouse", "souris maus ratón raton 鼠标 マウス"),
    ("collection", "sammlung colección coleccion coleção colecao collezione 集合 コレクション"),
    ("build", "construire bauen baue kompilieren kompiliere compilar compila compilare 构建 编译 ビルド"),
    (
        "select",
        "sélectionner selectionner sélectionne auswählen wähle seleccionar selecciona elegir elige selecionar selecione selezionare seleziona 选择 选中 選択",
    ),
    (
        "forward",
        "transférer transferer transfère weiterleiten leite reenviar reenvía encaminhar inoltrare inoltra 转发 転送",
    ),
    ("mark", "marquer marque markieren markiere marcar marca segnare segna 标记"),
    ("filter", "filtrer filtre filtern filtere filtrar filtra filtrare 筛选 过滤 フィルター フィルタ"),
    (
        "cancel",
        "annuler annule stornieren storniere absagen cancelar cancela annullare annulla disdire 取消 キャンセル 中止",
    ),
    ("scroll", "défiler defiler scrollen scrolle blättern desplazar desplaza rolar scorrere scorri 滚动 スクロール"),
    ("press key", "appuyer appuie drücken drücke presionar pulsar pulsa pressionar pressione premere premi 按下 押す"),
    ("key", "touche tasten tecla teclas tasto tasti 按键 キー"),
    ("coordinates latitude longitude", "coordonnées coordonnees koordinaten coordenadas 坐标 座標 経緯度"),
    ("news", "actualités actualites nouvelles nachrichten noticias notícias noticias notizie 新闻 ニュース"),
    ("process", "processus prozess prozesse proceso procesos processo processi 进程 プロセス"),
    (
        "kill terminate stop",
        "tuer terminer beenden beende abbrechen matar terminar termina terminare termina uccidere 终止 杀死 結束 強制終了",
    ),
    (
        "free available",
        "libre libres frei verfügbar verfugbar disponible disponibles livre livres disponível libero liberi disponibile 空闲 空き",
    ),
    (
        "retry",
        "réessayer reessayer wiederholen wiederhole reintentar reintenta repetir riprovare riprova 重试 再試行 リトライ",
    ),
    ("switch checkout", "basculer wechseln wechsle trocar mudar passare 切换 切り替え"),
    (
        "spend cost",
        "dépenser depenser dépensé depense ausgegeben ausgaben gastado gasto gastos speso spesa spese 花费 支出 費用",
    ),
    (
        "bullet list",
        "puces aufzählungspunkte aufzählungspunkten aufzählung viñetas vinetas marcadores elenco puntato 项目符号 箇条書き",
    ),
    ("browser navigate", "navegar navegue naviguer navigiere navigieren navigare naviga 浏览 ブラウズ"),
    ("time clock", "heure uhrzeit uhr hora ora 几点 时间 何時 時刻"),
    ("close", "fermer ferme schließen schliesse schließe cerrar cierra fechar feche chiudere chiudi 关闭 閉じる"),
];

/// Words that carry no meaning on their own in these languages (articles, prepositions).
const FOREIGN_STOP_WORDS: &[&str] = &[
    "le", "la", "les", "un", "une", "des", "du", "de", "dans", "sur", "pour", "avec", "et", "à", "au", "aux", "der",
    "die", "das", "den", "dem", "ein", "eine", "einen", "im", "in", "auf", "für", "mit", "und", "von", "zu", "el",
    "los", "las", "una", "unos", "en", "con", "por", "para", "y", "o", "del", "al", "os", "as", "um", "uma", "em",
    "no", "na", "com", "e", "il", "lo", "gli", "di", "da", "per", "su", "nel", "nella",
];

struct Table {
    /// Latin-script word → English terms.
    words: HashMap<String, Vec<&'static str>>,
    /// Chinese and Japanese words → English terms, longest first.
    cjk: Vec<(&'static str, Vec<&'static str>)>,
}

/// Whether `c` is a Chinese character or Japanese kana.
pub(super) fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0xff66..=0xff9f)
}

/// `word` with its accents dropped (é → e, ü → u, ç → c, ñ → n).
fn unaccented(word: &str) -> String {
    word.chars()
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
            'ç' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ñ' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ß' => 's',
            other => other,
        })
        .collect()
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut words: HashMap<String, Vec<&'static str>> = HashMap::new();
        let mut cjk: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
        for (english, foreign) in LEXICON {
            let terms: Vec<&'static str> = english.split(' ').collect();
            for word in foreign.split(' ') {
                if word.chars().any(is_cjk) {
                    cjk.push((word, terms.clone()));
                } else {
                    let lower = word.to_lowercase();
                    for form in [unaccented(&lower), lower] {
                        let entry = words.entry(form).or_default();
                        for t in &terms {
                            if !entry.contains(t) {
                                entry.push(t);
                            }
                        }
                    }
                }
            }
        }
        cjk.sort_by_key(|(word, _)| std::cmp::Reverse(word.chars().count()));
        Table { words, cjk }
    })
}

/// The English words `query` asks for in other languages, in the order found.
pub fn translate(query: &str) -> Vec<&'static str> {
    let table = table();
    let mut out: Vec<&'static str> = Vec::new();
    let mut add = |terms: &[&'static str]| {
        for t in terms {
            if !out.contains(t) {
                out.push(t);
            }
        }
    };
    for word in query.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-') {
        let lower = word.to_lowercase();
        if lower.is_empty() || lower.chars().any(is_cjk) || FOREIGN_STOP_WORDS.contains(&lower.as_str()) {
            continue;
        }
        if let Some(terms) = table.words.get(&lower).or_else(|| table.words.get(&unaccented(&lower))) {
            add(terms);
        }
    }
    // Chinese and Japanese: the longest words first, each stretch of text used once.
    if !query.chars().any(is_cjk) {
        return out;
    }
    let mut rest: String = query.to_string();
    for (word, terms) in &table.cjk {
        if rest.contains(word) {
            add(terms);
            rest = rest.replace(word, " ");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_other_languages_become_english_terms() {
        assert_eq!(translate("supprimer le fichier"), ["delete", "file"]);
        assert_eq!(translate("Datei löschen"), ["file", "delete"]);
        assert_eq!(translate("Datei loschen"), ["file", "delete"]);
        assert_eq!(translate("enviar un correo"), ["send", "email", "mail"]);
        assert_eq!(translate("在谷歌云端硬盘里搜索文件"), ["drive", "search", "find", "file"]);
        assert_eq!(translate("annuler la réunion"), ["cancel", "event", "meeting"]);
        assert_eq!(translate("ページをスクロールする"), ["scroll", "page"]);
        assert_eq!(translate("メールを送信"), ["email", "mail", "send"]);
        assert!(translate("list open pull requests").len() <= 2, "English stays English");
        // An English word that is also another language's (`rôle` written without its accent)
        // stands for itself, never for another English word.
        let english = "apply the admin role to the form, analyze the details and press the key; a champ with taste drinks cola at the grand prix, coordinate and attends";
        let words: Vec<&str> = english.split(|c: char| !c.is_alphanumeric()).collect();
        let terms = translate(english);
        assert!(terms.iter().all(|t| words.contains(t)), "{terms:?}");
        // A Chinese or Japanese word inside a longer one is not that word: a platform is not a
        // form, a bookmark not a mark.
        assert_eq!(translate("プラットフォーム"), ["platform"]);
        assert!(translate("ブックマークを追加").iter().all(|t| *t != "mark"));
        // Germans' appointments (`Termine`) are not a French order to stop.
        assert!(!translate("Termine am Montag").contains(&"kill"));
    }
}
